"""The removals a user makes, each leaving nothing behind (the rule: see the package doc).

The CLI and the TUI call these, never the stores' own delete methods, so every removal path
erases the copies too. Each one records its intent first (intents.py), erases, then clears
the intent; `finish_pending` finishes what a killed or starved removal left, with the same
code (`_APPLY`), so a removal and its completion cannot drift apart.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from assistant.context import AppContext
from assistant.erasure import intents
from assistant.erasure.intents import Intent
from assistant.erasure.removal import Removal
from assistant.erasure.traces import erase_traces
from assistant.errors import UserError
from indexing.errors import HintedError

if TYPE_CHECKING:
    from assistant.events.store import EventStore
    from assistant.memory.store import MemoryStore
    from assistant.sessions.store import SessionStore
    from indexing.knowledge import KnowledgeBase
    from indexing.knowledge_types import FolderRemoved

T = TypeVar("T")

class RemovalPending(UserError):
    """A removal was recorded but could not be finished now (disk full, read-only home…)."""


def remove_folder(ctx: AppContext, kb: KnowledgeBase, path: str) -> FolderRemoved:
    """Unregister a folder: its chunks, keyword rows and vectors leave the index files, its
    cached embeddings the cache, and the sessions and retrieval log forget its sources."""
    from indexing.knowledge_types import FolderError, FolderRemoved

    try:
        plan = kb.plan_removal(path)
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
    return _carry_out(ctx, intent, lambda data: _folder(ctx, data, kb))


def forget_all_memories(ctx: AppContext, store: MemoryStore) -> int:
    """Erase every memory, then every copy: the sessions' recalled memories and `remember`
    calls, and any cache entry an older release kept."""
    count = store.count(None)
    intent = Intent("all-memories", "every memory", {"texts": sorted(store.derived_texts())})
    _carry_out(ctx, intent, lambda data: _all_memories(ctx, data, store))
    return count


def purge_memory(ctx: AppContext, store: MemoryStore, id_or_prefix: str) -> str:
    """Erase one memory for good (no undo), and every copy of it; returns its id."""
    from assistant.memory.store import MemoryNotFound

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
    _carry_out(ctx, intent, lambda data: _memory(ctx, data, store))
    return memory_id


def delete_sessions(ctx: AppContext, sessions: SessionStore, session_ids: Sequence[str]) -> int:
    """Delete sessions: their turns, their conversation-index units, keywords and vectors, the
    retrieval-log entries of their searches; then scrub. Returns the sessions deleted."""
    log_ids: set[int] = set()
    for session_id in session_ids:
        log_ids |= sessions.log_ids(session_id)
    what = f"session {session_ids[0]}" if len(session_ids) == 1 else \
        f"{len(session_ids)} sessions"
    intent = Intent("sessions", what, {"ids": list(session_ids), "log_ids": sorted(log_ids)})
    return _carry_out(ctx, intent, lambda data: _sessions(ctx, data, sessions))


def delete_session(ctx: AppContext, sessions: SessionStore, session_id: str) -> None:
    sessions.resolve(session_id)  # SessionNotFound for an unknown id
    delete_sessions(ctx, sessions, [session_id])


def forget_all_sessions(ctx: AppContext, sessions: SessionStore) -> int:
    """Delete every session with its index, and the retrieval-log entries of their searches."""
    log_ids: set[int] = set()
    for session in sessions.list():
        log_ids |= sessions.log_ids(session.id)
    intent = Intent("all-sessions", "every session", {"log_ids": sorted(log_ids)})
    return _carry_out(ctx, intent, lambda data: _all_sessions(ctx, data, sessions))


def finished_sessions(ctx: AppContext, refs: Sequence[str]) -> list[str]:
    """Of these session refs, the ones a completed removal deleted (a re-run of an
    interrupted `brain sessions rm` is accepted)."""
    return [ref for ref in refs
            if intents.done_before(ctx.paths.data_dir, "sessions", ref, prefix=True)]


def finish_pending(ctx: AppContext) -> list[Intent]:
    """Finish every removal an earlier run recorded and did not finish; returns them.
    Raises RemovalPending when one cannot be finished now (it stays recorded)."""
    done: list[Intent] = []
    for intent in intents.pending(ctx.paths.data_dir):
        apply = _APPLY.get(intent.kind)
        if apply is None:
            continue  # written by a newer release: left for it
        if _finish(ctx, intent, _replay(ctx, apply)):
            done.append(intent)
    return done


def _replay(ctx: AppContext, apply: Callable[[AppContext, dict[str, Any], Any], object]
            ) -> Callable[[dict[str, Any]], object]:
    return lambda data: apply(ctx, data, None)  # None: it opens the stores itself


def has_pending(ctx: AppContext) -> bool:
    return bool(intents.pending(ctx.paths.data_dir))


# --- doing it ---------------------------------------------------------------------------------


def _carry_out(ctx: AppContext, intent: Intent, apply: Callable[[dict[str, Any]], T]) -> T:
    """Record, apply, clear. Nothing is erased before the record is on disk; a failure
    leaves the record for the next command and says so."""
    try:
        with intents.recorded(ctx.paths.data_dir, intent) as held:
            result = _apply(ctx, held, apply)
            _done(ctx, held)
    except OSError as exc:  # the record itself could not be written
        from indexing.filesystem import full_or_read_only

        reason = full_or_read_only(exc, ctx.paths.data_dir) or exc.strerror or str(exc)
        raise UserError(f"nothing was removed: the removal of {intent.what} could not be "
                        f"recorded ({reason})",
                        hint="free some disk space or make the data folder writable, then "
                             "run it again") from exc
    return result


def _finish(ctx: AppContext, intent: Intent, apply: Callable[[dict[str, Any]], object]
            ) -> bool:
    """Finish a recorded intent; False when another process finished it meanwhile."""
    with intents.held(intent) as ours:
        if not ours:
            return False
        _apply(ctx, intent, apply)
        _done(ctx, intent)
    return True


def _done(ctx: AppContext, intent: Intent) -> None:
    keys = {"folder": lambda d: [d["path"]], "memory": lambda d: [d["id"]],
            "sessions": lambda d: list(d["ids"]), "events": lambda d: list(d["ids"])
            }.get(intent.kind)
    if keys is not None:
        intents.note_done(ctx.paths.data_dir, intent.kind, keys(intent.data))
    intents.clear(intent)


def _apply(ctx: AppContext, intent: Intent, apply: Callable[[dict[str, Any]], T]) -> T:
    from indexing.filesystem import full_or_read_only

    try:
        return apply(intent.data)
    except (OSError, HintedError) as exc:
        reason = full_or_read_only(exc, ctx.paths.data_dir) or (
            exc.message if isinstance(exc, HintedError) else exc.strerror or str(exc))
        raise RemovalPending(
            f"the removal of {intent.what} is not finished ({reason}); it is recorded",
            hint="the next `brain` command finishes it (once there is disk space and the "
                 "home is writable)") from exc


def _folder(ctx: AppContext, data: dict[str, Any], kb: KnowledgeBase | None) -> FolderRemoved:
    from assistant.knowledge_service import open_knowledge
    from indexing.knowledge_types import FolderRemoval

    plan = FolderRemoval(data["path"], int(data["files"]), tuple(data["chunk_ids"]),
                         frozenset(data["hashes"]))
    own = kb is None
    kb = open_knowledge(ctx, with_embedder=False) if kb is None else kb
    try:
        removed = kb.finish_removal(plan)
    finally:
        if own:
            kb.close()
    erase_traces(ctx, Removal(folders=(removed.path,), cache_keys=removed.cache_keys))
    return removed


def _memory(ctx: AppContext, data: dict[str, Any], store: MemoryStore | None) -> None:
    texts = frozenset(data["texts"])
    with _memory_store(ctx, store) as live:
        live.erase(data["id"])
    erase_traces(ctx, Removal(memory_ids=frozenset({data["id"]}), memory_texts=texts,
                              cache_texts=texts))


def _all_memories(ctx: AppContext, data: dict[str, Any], store: MemoryStore | None) -> None:
    texts = frozenset(data["texts"])
    with _memory_store(ctx, store) as live:
        live.forget_all()
    erase_traces(ctx, Removal(all_memories=True, memory_texts=texts, cache_texts=texts))


def _sessions(ctx: AppContext, data: dict[str, Any], store: SessionStore | None) -> int:
    from assistant.conversations.erase import delete_sessions as delete_rows

    ids = tuple(str(i) for i in data["ids"])
    with _session_store(ctx, store) as live:
        deleted = delete_rows(live, ids)
    # The conversation index's vectors and keyword segments: its trace eraser (erasure/
    # conversations.py), like every other copy.
    erase_traces(ctx, Removal(sessions=ids, session_log_ids=frozenset(data["log_ids"])))
    return deleted


def _all_sessions(ctx: AppContext, data: dict[str, Any], store: SessionStore | None) -> int:
    from assistant.conversations import erase
    from assistant.conversations.service import open_conversations

    with _session_store(ctx, store) as live:
        count = erase.forget_all_sessions(open_conversations(ctx, live))
    erase_traces(ctx, Removal(sessions=("*",), session_log_ids=frozenset(data["log_ids"])))
    return count


def remove_events(ctx: AppContext, store: EventStore, ids: Sequence[str]) -> list[str]:
    """Erase agent events and the summaries written from them (assistant/events/erase.py).
    An id a completed removal erased is accepted (a re-run of an interrupted `events rm`)."""
    from assistant.events.model import EventError

    found: set[str] = set()
    for ref in ids:
        try:
            found.add(store.get(ref).id)
        except EventError:  # an unknown id: nothing is erased
            if not intents.done_before(ctx.paths.data_dir, "events", ref.strip(), prefix=True):
                raise
    wanted = sorted(found)
    if not wanted:
        return []
    covering = store.summaries_of(wanted)
    intent = Intent("events", f"{len(wanted)} agent events", {"ids": wanted + covering})
    return _carry_out(ctx, intent, lambda data: _events(ctx, data, store))


def forget_all_events(ctx: AppContext, store: EventStore) -> int:
    intent = Intent("all-events", "every agent event", {})
    return _carry_out(ctx, intent, lambda data: _all_events(ctx, data, store))


def _events(ctx: AppContext, data: dict[str, Any], store: EventStore | None) -> list[str]:
    from assistant.events import erase

    with _event_store(ctx, store) as live:
        # On a replay some may be gone already (deleted, then killed before the scrub).
        present = sorted(live.get_many([str(i) for i in data["ids"]]))
        return erase.remove_events(live, present)


def _all_events(ctx: AppContext, data: dict[str, Any], store: EventStore | None) -> int:
    from assistant.events import erase

    with _event_store(ctx, store) as live:
        return erase.forget_all_events(live)


_APPLY: dict[str, Callable[[AppContext, dict[str, Any], Any], object]] = {
    "events": _events,
    "all-events": _all_events,
    "folder": _folder,
    "memory": _memory,
    "all-memories": _all_memories,
    "sessions": _sessions,
    "all-sessions": _all_sessions,
}


@contextlib.contextmanager
def _memory_store(ctx: AppContext, store: MemoryStore | None) -> Iterator[MemoryStore]:
    """The given store, or this home's own, opened for the erasure and closed after it."""
    if store is not None:
        yield store
        return
    from assistant.memory.service import open_memory

    own = open_memory(ctx, eager_vectors=False)
    try:
        yield own
    finally:
        own.close()


@contextlib.contextmanager
def _event_store(ctx: AppContext, store: EventStore | None) -> Iterator[EventStore]:
    if store is not None:
        yield store
        return
    from assistant.events.store import EventStore

    own = EventStore.open(ctx.paths.events_db)
    try:
        yield own
    finally:
        own.close()


@contextlib.contextmanager
def _session_store(ctx: AppContext, store: SessionStore | None) -> Iterator[SessionStore]:
    if store is not None:
        yield store
        return
    from assistant.sessions.service import open_sessions

    own = open_sessions(ctx)
    try:
        yield own
    finally:
        own.close()
