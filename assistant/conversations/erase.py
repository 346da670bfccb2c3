"""Erasing conversations with no trace: sessions, their index units, keywords and vectors.

SQLite does the text (one transaction; units cascade from their turns and sessions and a
trigger takes their keywords along, with `secure_delete` on so freed pages are zeroed), then
the vectors go, then the keyword segments are merged so no deleted token survives in the FTS
b-tree. Forget-all also VACUUMs and truncates the WAL. The index's purge hook (issue 13's
no-trace purge of Chroma files, the embedding cache and SQLite free pages) runs last.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex
    from assistant.sessions.store import SessionStore


def delete_sessions(store: SessionStore, session_ids: Sequence[str]) -> int:
    """Delete these sessions in one transaction: their turns, summaries, index units and the
    units' keywords go with them (foreign keys, the keyword trigger). Their vectors are left
    to `forget_deleted` (the conversation index's trace eraser); returns sessions deleted."""
    deleted = 0
    with store.transaction() as conn:
        for session_id in dict.fromkeys(session_ids):
            deleted += conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
    return deleted


def forget_deleted(index: ConversationIndex, *, vectors: bool = True) -> int:
    """After sessions were deleted: their vectors, the keyword segments that held their words,
    the purge; returns vectors removed. `vectors=False` when no vector store exists yet
    (nothing was ever embedded): opening one only to find it empty would create it."""
    return index.forget(vectors=vectors)


def forget_all_sessions(index: ConversationIndex) -> int:
    """Delete every session, import record and summary, the whole index; VACUUM."""
    store = index.store
    with store.transaction() as conn:
        count = int(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
        conn.execute("DELETE FROM sessions")
        conn.execute("DELETE FROM session_imports")
    index.drop_all()
    with store.lock:
        store.conn.execute("VACUUM")
        with suppress(Exception):
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return count
