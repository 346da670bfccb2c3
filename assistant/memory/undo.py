"""Undoing changes to memories from their `history`: the latest change of one memory, one
given change (only while it is still that memory's latest), or the latest change of any.

An undo is itself a change (a `restore` entry, marked undone so it is never undone in turn);
undoing an add deletes the memory and brings back what it replaced, undoing a supersede steps
its replacement back.
"""

from __future__ import annotations

import json
import sqlite3

from assistant.errors import UserError
from assistant.memory.database import PROFILE_ID, MemoryDatabase
from assistant.memory.errors import ConcurrentChange, NothingToUndo
from assistant.memory.model import Actor, Event, HistoryEvent, Memory, MemoryStatus
from assistant.memory.rows import STATE_FIELDS, fetch, history, resolve_id
from assistant.memory.writes import apply_change


def undo(db: MemoryDatabase, id_or_prefix: str, *, expected_version: int | None) -> Memory:
    """Restore the state before the latest change not yet undone; repeatable.

    With `expected_version` (the `version` of the memory a change returned), only that very
    change is undone: if anything changed the memory since, nothing is and ConcurrentChange
    says so. The memory pane uses it so `u` brings back exactly what `d` deleted, whatever
    the cursor or another process did meanwhile.
    """
    if id_or_prefix.strip().lower() == PROFILE_ID:
        raise UserError("the profile is not a memory",
                        hint="use `undo_profile()` / `brain memory undo profile`")
    memory_id = resolve_id(db, id_or_prefix)
    with db.write() as conn:
        memory = fetch(conn, memory_id)
        if expected_version is not None and memory.version != expected_version:
            raise ConcurrentChange(
                f"memory {memory_id} changed since (version {memory.version}, expected "
                f"{expected_version}); nothing was undone",
                hint=f"`brain memory history {memory_id}` shows what changed",
            )
        row = conn.execute(
            "SELECT seq, event, old_state FROM history WHERE memory_id=? AND undone=0 "
            "AND event != ? ORDER BY seq DESC LIMIT 1",
            (memory_id, Event.RESTORE.value),
        ).fetchone()
        if row is None:
            raise NothingToUndo(f"nothing to undo for memory {memory_id}")
        return _undo_row(db, conn, memory, row)


def undo_change(db: MemoryDatabase, change_id: int) -> Memory:
    """Undo one history entry (`HistoryEvent.seq`): the change it records must still be the
    memory's latest; otherwise nothing is undone and ConcurrentChange names the memory."""
    with db.write() as conn:
        row = conn.execute(
            "SELECT seq, memory_id, event, old_state, undone FROM history WHERE seq=?",
            (change_id,),
        ).fetchone()
        if row is None or row["memory_id"] == PROFILE_ID:
            raise NothingToUndo(f"no memory change {change_id}")
        if row["undone"] or row["event"] == Event.RESTORE.value:
            raise NothingToUndo(f"change {change_id} to memory {row['memory_id']} was "
                                "already undone")
        later = conn.execute(
            "SELECT event FROM history WHERE memory_id=? AND seq>? AND undone=0 AND "
            "event != ? ORDER BY seq LIMIT 1",
            (row["memory_id"], change_id, Event.RESTORE.value),
        ).fetchone()
        if later is not None:  # (later changes already undone are no obstacle)
            raise ConcurrentChange(
                f"memory {row['memory_id']} changed after that ({later['event']}); "
                "nothing was undone",
                hint=f"`brain memory history {row['memory_id']}` shows what changed",
            )
        memory = fetch(conn, row["memory_id"])
        return _undo_row(db, conn, memory, row)


def latest_undoable(db: MemoryDatabase) -> tuple[int, Event]:
    """The most recent change to any memory not yet undone: its change id and kind."""
    with db.lock:
        row = db.conn.execute(
            "SELECT seq, event FROM history WHERE undone=0 AND event != ? AND memory_id != ? "
            "ORDER BY seq DESC LIMIT 1",
            (Event.RESTORE.value, PROFILE_ID),
        ).fetchone()
    if row is None:
        raise NothingToUndo("no memory change to undo")
    return int(row["seq"]), Event(row["event"])


def latest_change(db: MemoryDatabase, id_or_prefix: str) -> HistoryEvent | None:
    """The memory's latest change that can still be undone (its `seq` is the change id)."""
    events = [e for e in history(db, id_or_prefix)
              if not e.undone and e.event is not Event.RESTORE]
    return events[-1] if events else None


def _undo_row(db: MemoryDatabase, conn: sqlite3.Connection, memory: Memory,
              row: sqlite3.Row) -> Memory:
    """Revert the change `row` records (the memory's latest), inside the caller's write."""
    memory_id = memory.id
    conn.execute("UPDATE history SET undone=1 WHERE seq=?", (row["seq"],))
    if row["event"] == Event.ADD.value:
        restored = apply_change(db, conn, memory, {"status": MemoryStatus.DELETED.value},
                                event=Event.DELETE, actor=Actor.USER, undone=True)
        # Undoing a replacement brings back what it replaced.
        for prev in conn.execute(
            "SELECT id FROM memories WHERE superseded_by=? AND status=?",
            (memory_id, MemoryStatus.SUPERSEDED.value),
        ).fetchall():
            old = fetch(conn, prev[0])
            apply_change(db, conn, old, {"status": MemoryStatus.ACTIVE.value,
                                         "superseded_by": None},
                         event=Event.RESTORE, actor=Actor.USER, undone=True)
        return restored
    state = json.loads(row["old_state"])
    changes = {k: state[k] for k in STATE_FIELDS if k in state}
    restored = apply_change(db, conn, memory, changes, event=Event.RESTORE,
                            actor=Actor.USER, undone=True)
    if row["event"] == Event.SUPERSEDE.value and memory.superseded_by:
        # The memory is current again; its replacement steps back.
        successor = fetch(conn, memory.superseded_by)
        if successor.status is MemoryStatus.ACTIVE:
            apply_change(db, conn, successor, {"status": MemoryStatus.SUPERSEDED.value,
                                               "superseded_by": memory_id},
                         event=Event.SUPERSEDE, actor=Actor.USER, undone=True)
    return restored
