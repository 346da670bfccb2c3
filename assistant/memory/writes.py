"""Changing memories: every change is one write transaction that also appends to `history`
(so undo can restore any earlier state) and re-indexes the memory's keywords in step.

Each row carries a `version`; writers that read a memory earlier (extraction, reconciliation)
pass the version they saw and the write is refused if it changed meanwhile: a user's edit made
while extraction was running always wins. The caller catches the vectors up afterwards.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from assistant.errors import UserError
from assistant.memory.database import MemoryDatabase
from assistant.memory.document import search_text
from assistant.memory.errors import ConcurrentChange
from assistant.memory.model import Actor, Event, Memory, MemoryStatus, NewMemory
from assistant.memory.profile_store import follow_source
from assistant.memory.rows import fetch, resolve_id, state_of
from assistant.memory.write_rules import check_new


def log_change(
    db: MemoryDatabase,
    conn: sqlite3.Connection,
    memory_id: str,
    event: Event,
    actor: Actor,
    *,
    old: Memory | None,
    new_text: str | None,
    undone: bool = False,
) -> None:
    """Append one change to `history`, with the state before it (what undo restores)."""
    conn.execute(
        "INSERT INTO history (memory_id, event, old_text, new_text, actor, at, old_state, "
        "undone, via) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            memory_id,
            event.value,
            old.text if old else None,
            new_text,
            actor.value,
            db.now(),
            json.dumps(state_of(old)) if old else None,
            int(undone),
            db.via() if actor is not Actor.USER else None,
        ),
    )


def index_keywords(db: MemoryDatabase, memories: Sequence[tuple[Memory, str]]) -> None:
    if memories:
        db.keywords.add(
            (m.id, search_text(m.text, type=m.type, key=m.key, context=ctx,
                               created_at=m.created_at))
            for m, ctx in memories
        )


def _reindex(db: MemoryDatabase, conn: sqlite3.Connection, memory: Memory) -> None:
    """Bring the keyword row and the vector state in line with the memory's status."""
    db.keywords.delete([memory.id])
    if memory.status is MemoryStatus.ACTIVE:
        ctx = conn.execute("SELECT context FROM memories WHERE id=?", (memory.id,)).fetchone()
        index_keywords(db, [(memory, ctx[0] if ctx else "")])
        conn.execute("UPDATE memories SET vec_state='pending' WHERE id=?", (memory.id,))
    else:
        conn.execute("UPDATE memories SET vec_state='stale' WHERE id=?", (memory.id,))


def apply_change(
    db: MemoryDatabase,
    conn: sqlite3.Connection,
    memory: Memory,
    changes: dict[str, Any],
    *,
    event: Event,
    actor: Actor,
    expected_version: int | None = None,
    log_event: bool = True,
    undone: bool = False,
) -> Memory:
    """Write `changes` to one memory, bump its version, log it, re-index it."""
    if expected_version is not None and memory.version != expected_version:
        raise ConcurrentChange(
            f"memory {memory.id} changed since it was read (version {memory.version}, "
            f"expected {expected_version}); the newer change was kept"
        )
    changes = dict(changes)
    changes["updated_at"] = db.now()
    sets = ", ".join(f"{k}=?" for k in changes)
    conn.execute(
        f"UPDATE memories SET {sets}, version=version+1 WHERE id=?",
        (*changes.values(), memory.id),
    )
    updated = fetch(conn, memory.id)
    if log_event:
        log_change(db, conn, memory.id, event, actor, old=memory, new_text=updated.text,
                   undone=undone)
    if any(k in changes for k in ("text", "status", "key", "type")):
        _reindex(db, conn, updated)
    return updated


def insert(db: MemoryDatabase, conn: sqlite3.Connection, new: NewMemory, actor: Actor) -> Memory:
    """One new row (already checked by `check_new`) and its history entry."""
    now = db.now()
    created = now if new.created_at is None else new.created_at
    memory_id = db.new_id(conn)
    conn.execute(
        "INSERT INTO memories (id, type, key, text, context, confidence, importance, status, "
        "pinned, created_at, updated_at, source, session_id, source_text, edited_by_user) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            memory_id, new.type.value, new.key, new.text, new.context, new.confidence,
            new.importance, MemoryStatus.ACTIVE.value, int(new.pinned),
            created, min(created, now), new.source,
            new.session_id, new.source_text,
            int(actor is Actor.USER),
        ),
    )
    memory = fetch(conn, memory_id)
    log_change(db, conn, memory_id, Event.ADD, actor, old=None, new_text=new.text)
    return memory


def add(db: MemoryDatabase, new: NewMemory, *, actor: Actor) -> Memory:
    """Store one memory. Raises SecretRejected for secrets, NotGrounded for an assistant's
    memory the user never said, UserError for empty text."""
    new = check_new(new, actor=actor)
    with db.write() as conn:
        memory = insert(db, conn, new, actor)
        index_keywords(db, [(memory, new.context)])
    return memory


def edit(
    db: MemoryDatabase,
    id_or_prefix: str,
    text: str,
    *,
    actor: Actor,
    expected_version: int | None,
    key: str | None,
    evidence: Sequence[str],
) -> Memory:
    """Replace a memory's text (a user edit is marked so later rewrites never override it).
    An assistant's rewrite must be grounded in `evidence`, the user's messages."""
    memory_id = resolve_id(db, id_or_prefix)
    with db.write() as conn:
        memory = fetch(conn, memory_id)
        # An edit of the text alone is read with the memory's key (`bank_pin` + "4821").
        checked = check_new(NewMemory(text=text, key=key, evidence=tuple(evidence)),
                            actor=actor, current_key=memory.key)
        changes: dict[str, Any] = {"text": checked.text}
        if key is not None:
            changes["key"] = checked.key
        if actor is Actor.USER:
            changes["edited_by_user"] = 1
        if memory.status is not MemoryStatus.ACTIVE:
            changes["status"] = MemoryStatus.ACTIVE.value
        event = Event.EDIT_BY_USER if actor is Actor.USER else Event.UPDATE
        updated = apply_change(db, conn, memory, changes, event=event, actor=actor,
                               expected_version=expected_version)
        follow_source(db, conn, memory_id, erased=False)
    return updated


def delete(db: MemoryDatabase, id_or_prefix: str, *, actor: Actor) -> Memory:
    """Mark deleted (kept for undo and history until forget-all)."""
    memory_id = resolve_id(db, id_or_prefix)
    with db.write() as conn:
        memory = fetch(conn, memory_id)
        if memory.status is MemoryStatus.DELETED:
            raise UserError(f"memory {memory_id} is already deleted",
                            hint=f"`brain memory undo {memory_id}` restores it")
        updated = apply_change(db, conn, memory, {"status": MemoryStatus.DELETED.value},
                               event=Event.DELETE, actor=actor)
        follow_source(db, conn, memory_id, erased=False)
    return updated


def pin(db: MemoryDatabase, id_or_prefix: str, pinned: bool) -> tuple[Memory, bool]:
    """Pin or unpin (pinning an archived memory brings it back); returns the memory and
    whether anything changed."""
    memory_id = resolve_id(db, id_or_prefix)
    with db.write() as conn:
        memory = fetch(conn, memory_id)
        if memory.pinned == pinned:
            return memory, False
        changes: dict[str, Any] = {"pinned": int(pinned)}
        if pinned and memory.status is MemoryStatus.ARCHIVED:
            changes["status"] = MemoryStatus.ACTIVE.value
        return apply_change(db, conn, memory, changes,
                            event=Event.PIN if pinned else Event.UNPIN, actor=Actor.USER), True


def supersede(
    db: MemoryDatabase,
    old_id: str,
    new: NewMemory,
    *,
    actor: Actor,
    expected_version: int | None,
) -> Memory:
    """Store `new` and mark `old_id` superseded by it (linked), in one transaction."""
    new = check_new(new, actor=actor)
    with db.write() as conn:
        old = fetch(conn, old_id)
        if expected_version is not None and old.version != expected_version:
            raise ConcurrentChange(
                f"memory {old.id} changed since it was read; the newer change was kept"
            )
        if old.status is not MemoryStatus.ACTIVE:
            raise ConcurrentChange(f"memory {old.id} is no longer active")
        created = insert(db, conn, new, actor)
        index_keywords(db, [(created, new.context)])
        apply_change(db, conn, old, {"status": MemoryStatus.SUPERSEDED.value,
                                     "superseded_by": created.id},
                     event=Event.SUPERSEDE, actor=actor)
    return created


def archive(db: MemoryDatabase, ids: Sequence[str], *, actor: Actor) -> int:
    """Capacity limit: archive active, unpinned memories (reversible with undo/restore)."""
    count = 0
    with db.write() as conn:
        for memory_id in ids:
            memory = fetch(conn, memory_id)
            if memory.pinned or memory.status is not MemoryStatus.ACTIVE:
                continue
            apply_change(db, conn, memory, {"status": MemoryStatus.ARCHIVED.value},
                         event=Event.ARCHIVE, actor=actor)
            count += 1
    return count


def mark_used(db: MemoryDatabase, ids: Sequence[str]) -> None:
    if not ids:
        return
    now = db.now()
    with db.write() as conn:
        conn.executemany(
            "UPDATE memories SET last_used_at=?, use_count=use_count+1 WHERE id=?",
            [(now, i) for i in ids],
        )
