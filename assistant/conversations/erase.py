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


def forget_sessions(
    index: ConversationIndex, session_ids: Sequence[str], *, vectors: bool = True
) -> int:
    """Delete these sessions and everything indexed from them; returns sessions deleted.

    `vectors=False` when no vector store exists yet (nothing was ever embedded): opening one
    only to find it empty would create it."""
    deleted = 0
    with index.store.transaction() as conn:
        for session_id in dict.fromkeys(session_ids):
            deleted += conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount
    index.forget(vectors=vectors)
    return deleted


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
