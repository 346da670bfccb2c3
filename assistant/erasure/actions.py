"""The removals a user makes, each leaving nothing behind (the rule: see the package doc).

The CLI and the TUI call these, never the stores' own delete methods, so every removal path
erases the copies too. Each one records its intent first (intents.py), erases, then clears
the intent; `finish_pending` finishes what a killed or starved removal left, with the same
code (`_APPLY`), so a removal and its completion cannot drift apart. Every one works in the
caller's stores (`Stores`: the process's `Services`) and opens none of its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assistant.context import AppContext
from assistant.conversations import erase as conversations_erase
from assistant.erasure import intents
from assistant.erasure.intents import Intent
from assistant.erasure.removal import Removal
from assistant.erasure.stores import Stores
from assistant.erasure.traces import erase_traces
from assistant.errors import UserError
from assistant.events import erase as events_erase
from assistant.events.model import EventError
from indexing.errors import HintedError
from indexing.filesystem import full_or_read_only

if TYPE_CHECKING:
    from indexing.knowledge_types import FolderRemoved

T = TypeVar("T")

class RemovalPending(UserError):
    """A removal was recorded but could not be finished now (disk full, read-only home…)."""


def remove_folder(stores: Stores, path: str) -> FolderRemoved:
    """Unregister a folder: its chunks, keyword rows and vectors leave the index files, its
    cached embeddings the cache, and the sessions and retrieval log forget its sources."""
    from indexing.knowledge_types import FolderError, FolderRemoved

    ctx = stores.ctx
    try:
        plan = stores.light_knowledge().plan_removal(path)
    except FolderError:
        # A re-run of a removal that is complete (maybe finished by a later command after
        # this one was killed) is accepted: the folder is not indexed, as asked.
        given = Path(path).expanduser()
        for name in dict.fromkeys((str(given.absolute()), os.path.realpath(given))):
            if intents.done_before(ctx.paths.data_dir, "folder", name):
                return FolderRemoved(name, 0, 0, earlier=True)
        raise
    intent = Intent("folder", f"folder {plan.path}", {
        "path": plan.path, "files": plan.files, "chunk_ids": list(plan.chunk_ids),
        "hashes": sorted(plan.hashes)})
    return _carry_out(stores, intent, lambda data: _folder(stores, data))


def forget_all_memories(stores: Stores) -> int:
    """Erase every memory, then every copy: the sessions' recalled memories and `remember`
    calls, and any cache entry an older release kept."""
    store = stores.memory()
    count = store.count(None)
    intent = Intent("all-memories", "every memory", {"texts": sorted(store.derived_texts())})
    _carry_out(stores, intent, lambda data: _all_memories(stores, data))
    return count


def purge_memory(stores: Stores, id_or_prefix: str) -> str:
    """Erase one memory for good (no undo), and every copy of it; returns its id."""
    from assistant.memory.store import MemoryNotFound

    ctx, store = stores.ctx, stores.memory()
    try:
        memory_id = store.resolve_id(id_or_prefix)
    except MemoryNotFound:
        done = intents.done_before(ctx.paths.data_dir, "memory", id_or_prefix.strip(),
                                   prefix=True)
        if done is None:
            raise
        return done
    intent = Intent("memory", f"memory {memory_id}", {
        "id": memory_id, "texts": sorted(store.derived_texts([memory_id]))})
    _carry_out(stores, intent, lambda data: _memory(stores, data))
    return memory_id


def delete_sessions(stores: Stores, session_ids: Sequence[str]) -> int:
    """Delete sessions: their turns, their conversation-index units, keywords and vectors, the
    retrieval-log entries of their searches; then scrub. Returns the sessions deleted."""
    sessions = stores.sessions()
    log_ids: set[int] = set()
    for session_id in session_ids:
        log_ids |= sessions.log_ids(session_id)
    what = f"session {session_ids[0]}" if len(session_ids) == 1 else \
        f"{len(session_ids)} sessions"
    intent = Intent("sessions", what, {"ids": list(session_ids), "log_ids": sorted(log_ids)})
    return _carry_out(stores, intent, lambda data: _sessions(stores, data))


def delete_session(stores: Stores, session_id: str) -> None:
    stores.sessions().resolve(session_id)  # SessionNotFound for an unknown id
    delete_sessions(stores, [session_id])


def forget_all_sessions(stores: Stores) -> int:
    """Delete every session with its index, and the retrieval-log entries of their searches."""
    sessions = stores.sessions()
    log_ids: set[int] = set()
    for session in sessions.list():
        log_ids |= sessions.log_ids(session.id)
    intent = Intent("all-sessions", "every session", {"log_ids": sorted(log_ids)})
    return _carry_out(stores, intent, lambda data: _all_sessions(stores, data))


def finished_sessions(ctx: AppContext, refs: Sequence[str]) -> list[str]:
    """Of these session refs, the ones a completed removal deleted (a re-run of an
    interrupted `brain sessions rm` is accepted)."""
    return [ref for ref in refs
            if intents.done_before(ctx.paths.data_dir, "sessions", ref, prefix=True)]


def finish_pending(stores: Stores) -> list[Intent]:
    """Finish every removal an earlier run recorded and did not finish; returns them.
    Raises RemovalPending when one cannot be finished now (it stays recorded)."""
    done: list[Intent] = []
    for intent in intents.pending(stores.ctx.paths.data_dir):
        apply = _APPLY.get(intent.kind)
        if apply is None:
            continue  # written by a newer release: left for it
        if _finish(stores, intent, _replay(stores, apply)):
            done.append(intent)
    return done


def _replay(stores: Stores, apply: Callable[[Stores, dict[str, Any]], object]
            ) -> Callable[[dict[str, Any]], object]:
    return lambda data: apply(stores, data)


def has_pending(ctx: AppContext) -> bool:
    return bool(intents.pending(ctx.paths.data_dir))


# --- doing it ---------------------------------------------------------------------------------


def _carry_out(stores: Stores, intent: Intent, apply: Callable[[dict[str, Any]], T]) -> T:
    """Record, apply, clear. Nothing is erased before the record is on disk; a failure
    leaves the record for the next command and says so."""
    ctx = stores.ctx
    try:
        with intents.recorded(ctx.paths.data_dir, intent) as held:
            result = _apply(ctx, held, apply)
            _done(ctx, held)
    except OSError as exc:  # the record itself could not be written
        reason = full_or_read_only(exc, ctx.paths.data_dir) or exc.strerror or str(exc)
        raise UserError(f"nothing was removed: the removal of {intent.what} could not be "
                        f"recorded ({reason})",
                        hint="free some disk space or make the data folder writable, then "
                             "run it again") from exc
    return result


def _finish(stores: Stores, intent: Intent, apply: Callable[[dict[str, Any]], object]
            ) -> bool:
    """Finish a recorded intent; False when another process finished it meanwhile."""
    with intents.held(intent) as ours:
        if not ours:
            return False
        _apply(stores.ctx, intent, apply)
        _done(stores.ctx, intent)
    return True


def _done(ctx: AppContext, intent: Intent) -> None:
    keys = {"folder": lambda d: [d["path"]], "memory": lambda d: [d["id"]],
            "sessions": lambda d: list(d["ids"]), "events": lambda d: list(d["ids"])
            }.get(intent.kind)
    if keys is not None:
        intents.note_done(ctx.paths.data_dir, intent.kind, keys(intent.data))
    intents.clear(intent)


def _apply(ctx: AppContext, intent: Intent, apply: Callable[[dict[str, Any]], T]) -> T:
    try:
        return apply(intent.data)
    except (OSError, HintedError) as exc:
        reason = full_or_read_only(exc, ctx.paths.data_dir) or (
            exc.message if isinstance(exc, HintedError) else exc.strerror or str(exc))
        raise RemovalPending(
            f"the removal of {intent.what} is not finished ({reason}); it is recorded",
            hint="the next `brain` command finishes it (once there is disk space and the "
                 "home is writable)") from exc


def _folder(stores: Stores, data: dict[str, Any]) -> FolderRemoved:
    from indexing.knowledge_types import FolderRemoval

    plan = FolderRemoval(data["path"], int(data["files"]), tuple(data["chunk_ids"]),
                         frozenset(data["hashes"]))
    removed = stores.light_knowledge().finish_removal(plan)
    erase_traces(stores, Removal(folders=(removed.path,), cache_keys=removed.cache_keys))
    return removed


def _memory(stores: Stores, data: dict[str, Any]) -> None:
    texts = frozenset(data["texts"])
    stores.memory().erase(data["id"])
    erase_traces(stores, Removal(memory_ids=frozenset({data["id"]}), memory_texts=texts,
                                 cache_texts=texts))


def _all_memories(stores: Stores, data: dict[str, Any]) -> None:
    texts = frozenset(data["texts"])
    stores.memory().forget_all()
    erase_traces(stores, Removal(all_memories=True, memory_texts=texts, cache_texts=texts))


def _sessions(stores: Stores, data: dict[str, Any]) -> int:
    ids = tuple(str(i) for i in data["ids"])
    deleted = conversations_erase.delete_sessions(stores.sessions(), ids)
    # The conversation index's vectors and keyword segments: its trace eraser (erasure/
    # conversations.py), like every other copy.
    erase_traces(stores, Removal(sessions=ids, session_log_ids=frozenset(data["log_ids"])))
    return deleted


def _all_sessions(stores: Stores, data: dict[str, Any]) -> int:
    count = conversations_erase.forget_all_sessions(stores.conversations())
    erase_traces(stores, Removal(sessions=("*",), session_log_ids=frozenset(data["log_ids"])))
    return count


def remove_events(stores: Stores, ids: Sequence[str]) -> list[str]:
    """Erase agent events and the summaries written from them (assistant/events/erase.py).
    An id a completed removal erased is accepted (a re-run of an interrupted `events rm`)."""
    store = stores.events().store
    found: set[str] = set()
    for ref in ids:
        try:
            found.add(store.get(ref).id)
        except EventError:  # an unknown id: nothing is erased
            if not intents.done_before(stores.ctx.paths.data_dir, "events", ref.strip(),
                                       prefix=True):
                raise
    wanted = sorted(found)
    if not wanted:
        return []
    covering = store.summaries_of(wanted)
    intent = Intent("events", f"{len(wanted)} agent events", {"ids": wanted + covering})
    return _carry_out(stores, intent, lambda data: _events(stores, data))


def forget_all_events(stores: Stores) -> int:
    intent = Intent("all-events", "every agent event", {})
    return _carry_out(stores, intent, lambda data: _all_events(stores, data))


def _events(stores: Stores, data: dict[str, Any]) -> list[str]:
    store = stores.events().store
    # On a replay some may be gone already (deleted, then killed before the scrub).
    present = sorted(store.get_many([str(i) for i in data["ids"]]))
    return events_erase.remove_events(store, present)


def _all_events(stores: Stores, data: dict[str, Any]) -> int:
    return events_erase.forget_all_events(stores.events().store)


_APPLY: dict[str, Callable[[Stores, dict[str, Any]], object]] = {
    "events": _events,
    "all-events": _all_events,
    "folder": _folder,
    "memory": _memory,
    "all-memories": _all_memories,
    "sessions": _sessions,
    "all-sessions": _all_sessions,
}
