"""Reading memories: rows to `Memory`, ids from prefixes, lists, counts and history.

`state_of` is what a change can alter and undo restores (kept in `history.old_state`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from assistant.errors import UserError
from assistant.memory.database import PROFILE_ID, MemoryDatabase
from assistant.memory.errors import MemoryNotFound
from assistant.memory.model import Actor, Event, HistoryEvent, Memory, MemoryStatus, MemoryType

COLUMNS = (
    "id, type, key, text, confidence, importance, status, pinned, created_at, updated_at, "
    "last_used_at, use_count, source, session_id, source_text, superseded_by, version, "
    "edited_by_user"
)
# Restorable state: everything a change can alter.
STATE_FIELDS = (
    "type", "key", "text", "confidence", "importance", "status", "pinned", "superseded_by",
    "edited_by_user",
)


def row_to_memory(row: sqlite3.Row) -> Memory:
    return Memory(
        id=row["id"],
        type=MemoryType(row["type"]),
        key=row["key"],
        text=row["text"],
        confidence=float(row["confidence"]),
        importance=float(row["importance"]),
        status=MemoryStatus(row["status"]),
        pinned=bool(row["pinned"]),
        created_at=float(row["created_at"]),
        updated_at=float(row["updated_at"]),
        last_used_at=None if row["last_used_at"] is None else float(row["last_used_at"]),
        use_count=int(row["use_count"]),
        source=row["source"],
        session_id=row["session_id"],
        source_text=row["source_text"],
        superseded_by=row["superseded_by"],
        version=int(row["version"]),
        edited_by_user=bool(row["edited_by_user"]),
    )


def state_of(memory: Memory) -> dict[str, Any]:
    return {
        "type": memory.type.value,
        "key": memory.key,
        "text": memory.text,
        "confidence": memory.confidence,
        "importance": memory.importance,
        "status": memory.status.value,
        "pinned": int(memory.pinned),
        "superseded_by": memory.superseded_by,
        "edited_by_user": int(memory.edited_by_user),
    }


def fetch(conn: sqlite3.Connection, memory_id: str) -> Memory:
    row = conn.execute(f"SELECT {COLUMNS} FROM memories WHERE id=?", (memory_id,)).fetchone()
    if row is None:
        raise MemoryNotFound(f"no memory with id {memory_id!r}")
    return row_to_memory(row)


def resolve_id(db: MemoryDatabase, prefix: str) -> str:
    """The full id for a unique prefix (case-insensitive)."""
    wanted = prefix.strip().lower()
    if not wanted:
        raise MemoryNotFound("empty memory id")
    with db.lock:
        rows = db.conn.execute(
            "SELECT id FROM memories WHERE id >= ? AND id < ? LIMIT 3",
            (wanted, wanted + "\uffff"),
        ).fetchall()
    if not rows:
        raise MemoryNotFound(
            f"no memory with id {prefix!r}", hint="see `brain memory list --all`"
        )
    if len(rows) > 1:
        raise UserError(
            f"id prefix {prefix!r} matches several memories "
            f"({', '.join(r[0] for r in rows)}…)",
            hint="type more characters of the id",
        )
    return str(rows[0][0])


def get(db: MemoryDatabase, id_or_prefix: str) -> Memory:
    memory_id = resolve_id(db, id_or_prefix)
    with db.lock:
        return fetch(db.conn, memory_id)


def get_many(db: MemoryDatabase, ids: Sequence[str]) -> dict[str, Memory]:
    out: dict[str, Memory] = {}
    with db.lock:
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for row in db.conn.execute(
                f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})", part
            ):
                out[row["id"]] = row_to_memory(row)
    return out


def list_memories(
    db: MemoryDatabase,
    *,
    statuses: Iterable[MemoryStatus] | None,
    type: MemoryType | None,
    key: str | None,
    pinned: bool | None,
) -> list[Memory]:
    """Memories, pinned first then newest first. `statuses=None` means every status."""
    where: list[str] = []
    params: list[Any] = []
    if statuses is not None:
        wanted = [s.value for s in statuses]
        where.append(f"status IN ({','.join('?' * len(wanted))})")
        params += wanted
    if type is not None:
        where.append("type=?")
        params.append(type.value)
    if key is not None:
        where.append("key=?")
        params.append(key)
    if pinned is not None:
        where.append("pinned=1" if pinned else "pinned=0")  # literal: memories_pinned
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    with db.lock:
        rows = db.conn.execute(
            f"SELECT {COLUMNS} FROM memories {clause} "
            "ORDER BY pinned DESC, updated_at DESC, rowid DESC",
            params,
        ).fetchall()
    return [row_to_memory(r) for r in rows]


def sure_keyed(db: MemoryDatabase, min_confidence: float) -> list[Memory]:
    """Active unpinned facts and preferences with a key and at least `min_confidence` (the
    profile facts every recall carries), newest first: read through the key index, so a recall
    costs what it carries, not a pass over every memory (issue 25: listing all of them took a
    chat turn's recall to ~0.9 s at 10k memories)."""
    with db.lock:
        rows = db.conn.execute(
            f"SELECT {COLUMNS} FROM memories INDEXED BY memories_key "
            "WHERE key IS NOT NULL AND key != '' AND status=? AND pinned=0 "
            "AND type IN (?, ?) AND confidence >= ? ORDER BY updated_at DESC, rowid DESC",
            (MemoryStatus.ACTIVE.value, MemoryType.FACT.value, MemoryType.PREFERENCE.value,
             min_confidence),
        ).fetchall()
    return [row_to_memory(r) for r in rows]


def count(db: MemoryDatabase, status: MemoryStatus | None) -> int:
    with db.lock:
        if status is None:
            return int(db.conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        return int(
            db.conn.execute(
                "SELECT count(*) FROM memories WHERE status=?", (status.value,)
            ).fetchone()[0]
        )


def history(db: MemoryDatabase, id_or_prefix: str) -> list[HistoryEvent]:
    memory_id = PROFILE_ID if id_or_prefix == PROFILE_ID else resolve_id(db, id_or_prefix)
    with db.lock:
        rows = db.conn.execute(
            "SELECT seq, memory_id, event, old_text, new_text, actor, at, undone, via "
            "FROM history WHERE memory_id=? ORDER BY seq",
            (memory_id,),
        ).fetchall()
    return [
        HistoryEvent(
            seq=r["seq"], memory_id=r["memory_id"], event=Event(r["event"]),
            old_text=r["old_text"], new_text=r["new_text"], actor=Actor(r["actor"]),
            at=float(r["at"]), undone=bool(r["undone"]), via=r["via"],
        )
        for r in rows
    ]
