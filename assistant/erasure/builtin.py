"""The trace erasers of the stores every home has: sessions, retrieval log, embedding cache,
the dense snapshots, the conversation index."""

from __future__ import annotations

from collections.abc import Callable

from assistant.context import AppContext
from assistant.erasure.removal import Removal


def sessions(ctx: AppContext, removal: Removal) -> None:
    """Turns keep their messages; their sources and memories become markers."""
    path = ctx.paths.sessions_db
    if not path.exists() or not (removal.folders or removal.memories or removal.sessions):
        return
    from assistant.sessions.store import SessionStore

    store = SessionStore.open(path)
    try:
        store.redact_sources(removal.folders)
        if removal.memories:
            store.redact_memories(None if removal.all_memories else removal.memory_ids,
                                  removal.memory_texts)
        store.scrub()
    finally:
        store.close()


def retrieval_log(ctx: AppContext, removal: Removal) -> None:
    """Hits, feedback and filters naming removed sources; a deleted session's entries."""
    path = ctx.paths.retrieval_log_db
    if not path.exists() or not (removal.folders or removal.session_log_ids):
        return
    from assistant.retrieval.log import RetrievalLog

    with RetrievalLog.open(path) as log:
        log.delete_entries(removal.session_log_ids)
        log.redact_sources(removal.folders)
        log.scrub()


def embedding_cache(ctx: AppContext, removal: Removal) -> None:
    """Cached vectors of removed chunks (and any a memory left there before memories stopped
    being cached)."""
    from indexing.embedder import text_key
    from indexing.embedding_cache import erase_cached

    keys = set(removal.cache_keys) | {text_key(t) for t in removal.cache_texts}
    if keys:
        erase_cached(ctx.paths.embedding_cache_dir, keys)


def dense_snapshots(ctx: AppContext, removal: Removal) -> None:
    """Rows of removed chunks in the dense snapshot files, other models' included: the
    current one is rewritten by the removal itself, but a switch back to another model reads
    its file by content hash."""
    if removal.cache_keys and ctx.paths.vectors_dir.is_dir():
        from indexing.dense_snapshot import erase_content

        erase_content(ctx.paths.vectors_dir, removal.cache_keys)


def conversation_index(ctx: AppContext, removal: Removal) -> None:
    from assistant.erasure.conversations import conversation_index as erase

    erase(ctx, removal)


# The type is traces.TraceEraser spelled out: traces.py loads this module on first use, and an
# import back would close a circle.
ERASERS: dict[str, Callable[[AppContext, Removal], None]] = {
    "sessions database": sessions,
    "retrieval log": retrieval_log,
    "embedding cache": embedding_cache,
    "dense snapshots": dense_snapshots,
    "conversation index": conversation_index,
}
