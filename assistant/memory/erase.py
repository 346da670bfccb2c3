"""Erasing memories for good — rows, history, keyword entries and vectors — and scrubbing the
files so nothing of them remains on disk (no undo). Deleted rows are overwritten on disk
(`secure_delete`); `forget_all` also drops the keyword tables and VACUUMs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assistant.memory.database import KEYWORD_TABLE, MemoryDatabase
from assistant.memory.document import embedding_text
from assistant.memory.model import Memory, MemoryType
from assistant.memory.profile_store import follow_source
from assistant.memory.rows import count, fetch, resolve_id
from assistant.memory.vectors import VectorSync


def derived_texts(db: MemoryDatabase, ids: Sequence[str] | None = None) -> set[str]:
    """Every text the store may have embedded for these memories (all when None), in every
    version their history records: to erase what older releases cached on disk."""
    with db.lock:
        if ids is None:
            rows = db.conn.execute(
                "SELECT id, type, key, text, context, created_at FROM memories").fetchall()
        else:
            rows = []
            for start in range(0, len(ids), 500):
                part = list(ids[start : start + 500])
                rows += db.conn.execute(
                    "SELECT id, type, key, text, context, created_at FROM memories WHERE "
                    f"id IN ({','.join('?' * len(part))})", part).fetchall()
        texts: set[str] = set()
        for row in rows:
            versions = {(row["text"], row["type"], row["key"])}
            for event in db.conn.execute(
                "SELECT old_text, new_text, old_state FROM history WHERE memory_id=?",
                (row["id"],),
            ):
                state = json.loads(event["old_state"]) if event["old_state"] else {}
                kind = state.get("type", row["type"])
                key = state.get("key", row["key"])
                versions |= {(t, kind, key) for t in (event["old_text"], event["new_text"])
                             if t}
            for text, kind, key in versions:
                texts.add(text)
                texts.add(embedding_text(text, type=MemoryType(kind), key=key,
                                         context=row["context"],
                                         created_at=row["created_at"]))
    return texts


def purge(db: MemoryDatabase, vectors: VectorSync, id_or_prefix: str) -> Memory:
    """Erase one memory for good and scrub the files (no undo). Returns it as it was."""
    memory_id = resolve_id(db, id_or_prefix)
    with db.lock:
        memory = fetch(db.conn, memory_id)
    erase(db, vectors, memory_id)
    return memory


def erase(db: MemoryDatabase, vectors: VectorSync, memory_id: str) -> bool:
    """`purge` by exact id, idempotent: what is left of the memory goes (the vector and
    the scrub even when the row went before a crash). Returns whether the row was there."""
    with db.lock:
        with db.write() as conn:
            found = conn.execute("DELETE FROM memories WHERE id=?", (memory_id,)).rowcount
            conn.execute("DELETE FROM history WHERE memory_id=?", (memory_id,))
            conn.execute("UPDATE memories SET superseded_by=NULL WHERE superseded_by=?",
                         (memory_id,))
            db.keywords.delete([memory_id])
            follow_source(db, conn, memory_id, erased=True)
        index = vectors.index()
        index.delete([memory_id])
        index.compact()  # Chroma keeps a deleted vector's bytes until rewritten
        db.scrub()
    return bool(found)


def forget_all(db: MemoryDatabase, vectors: VectorSync) -> int:
    """Erase every memory, its history, its vectors and keyword rows; leave nothing on disk."""
    with db.lock:
        erased = count(db, None)
        vectors.drop()
        with db.write() as conn:
            conn.execute("DELETE FROM memories")
            conn.execute("DELETE FROM history")
            conn.execute("DELETE FROM profile")
            conn.execute("DELETE FROM counters")
            conn.execute("DELETE FROM imports")
            # Dropping (not emptying) the FTS tables leaves no tokens in old FTS segments;
            # virtual tables first (that drops their shadow tables), then the side tables.
            prefix = KEYWORD_TABLE.replace("_", "\\_") + "%"
            for virtual in (True, False):
                names = [r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE ? "
                    "ESCAPE '\\' AND (sql LIKE 'CREATE VIRTUAL%') = ? ORDER BY name DESC",
                    (prefix, virtual),
                )]
                for name in names:
                    conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            db.reopen_keywords(conn)
        db.scrub()
    return erased
