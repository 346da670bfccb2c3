"""The removals a user makes, each leaving nothing behind (the rule: see the package doc).

The CLI and the TUI call these, never the stores' own delete methods, so every removal path
erases the copies too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.erasure.removal import Removal
from assistant.erasure.traces import erase_traces

if TYPE_CHECKING:
    from assistant.chat.sessions import SessionStore
    from assistant.memory.model import Memory
    from assistant.memory.store import MemoryStore
    from indexing.knowledge import FolderRemoved, KnowledgeBase


def remove_folder(ctx: AppContext, kb: KnowledgeBase, path: str) -> FolderRemoved:
    """Unregister a folder: its chunks, keyword rows and vectors leave the index files, its
    cached embeddings the cache, and the sessions and retrieval log forget its sources."""
    removed = kb.remove_folder(path)
    erase_traces(ctx, Removal(folders=(removed.path,), cache_keys=removed.cache_keys))
    return removed


def forget_all_memories(ctx: AppContext, store: MemoryStore) -> int:
    """Erase every memory, then every copy: the sessions' recalled memories and `remember`
    calls, and any cache entry an older release kept."""
    texts = store.derived_texts()
    count = store.forget_all()
    erase_traces(ctx, Removal(all_memories=True, memory_texts=frozenset(texts),
                              cache_texts=frozenset(texts)))
    return count


def purge_memory(ctx: AppContext, store: MemoryStore, id_or_prefix: str) -> Memory:
    """Erase one memory for good (no undo), and every copy of it."""
    memory_id = store.resolve_id(id_or_prefix)
    texts = store.derived_texts([memory_id])
    memory = store.purge(memory_id)
    erase_traces(ctx, Removal(memory_ids=frozenset({memory.id}),
                              memory_texts=frozenset(texts), cache_texts=frozenset(texts)))
    return memory


def delete_sessions(ctx: AppContext, sessions: SessionStore, session_ids: Sequence[str]) -> int:
    """Delete sessions: their turns, their conversation-index units, keywords and vectors, the
    retrieval-log entries of their searches; then scrub. Returns the sessions deleted."""
    from assistant.conversations.erase import delete_sessions as delete_rows

    log_ids: set[int] = set()
    for session_id in session_ids:
        log_ids |= sessions.log_ids(session_id)
    deleted = delete_rows(sessions, session_ids)
    # The conversation index's vectors and keyword segments: its trace eraser (erasure/
    # conversations.py), like every other copy.
    erase_traces(ctx, Removal(sessions=tuple(session_ids), session_log_ids=frozenset(log_ids)))
    return deleted


def delete_session(ctx: AppContext, sessions: SessionStore, session_id: str) -> None:
    sessions.resolve(session_id)  # SessionNotFound for an unknown id
    delete_sessions(ctx, sessions, [session_id])


def forget_all_sessions(ctx: AppContext, sessions: SessionStore) -> int:
    """Delete every session with its index, and the retrieval-log entries of their searches."""
    from assistant.conversations import erase
    from assistant.conversations.service import open_conversations

    log_ids: set[int] = set()
    for session in sessions.list():
        log_ids |= sessions.log_ids(session.id)
    count = erase.forget_all_sessions(open_conversations(ctx, sessions))
    erase_traces(ctx, Removal(sessions=("*",), session_log_ids=frozenset(log_ids)))
    return count
