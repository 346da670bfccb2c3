"""The trace erasers of the stores every home has: sessions, retrieval log, embedding cache,
the dense snapshots, the conversation index. Each works in the caller's stores (stores.py)
and opens none of its own."""

from __future__ import annotations

from collections.abc import Callable

from assistant.erasure.conversations import conversation_index as erase_conversations
from assistant.erasure.removal import Removal
from assistant.erasure.stores import Stores


def sessions(stores: Stores, removal: Removal) -> None:
    """Turns keep their messages; their sources and memories become markers."""
    # A home without a sessions database has no copy to erase (and is not given one).
    if not stores.ctx.paths.sessions_db.exists() or not (
            removal.folders or removal.memories or removal.sessions):
        return
    store = stores.sessions()
    store.redact_sources(removal.folders)
    if removal.memories:
        store.redact_memories(None if removal.all_memories else removal.memory_ids,
                              removal.memory_texts)
    store.scrub()


def retrieval_log(stores: Stores, removal: Removal) -> None:
    """Hits, feedback and filters naming removed sources; a deleted session's entries."""
    if not stores.ctx.paths.retrieval_log_db.exists() or not (
            removal.folders or removal.session_log_ids):
        return
    log = stores.retrieval_log()
    log.delete_entries(removal.session_log_ids)
    log.redact_sources(removal.folders)
    log.scrub()


def embedding_cache(stores: Stores, removal: Removal) -> None:
    """Cached vectors of removed chunks (and any a memory left there before memories stopped
    being cached)."""
    from indexing.embedder import text_key
    from indexing.embedding_cache import erase_cached

    keys = set(removal.cache_keys) | {text_key(t) for t in removal.cache_texts}
    if keys:
        erase_cached(stores.ctx.paths.embedding_cache_dir, keys)


def dense_snapshots(stores: Stores, removal: Removal) -> None:
    """Rows of removed chunks in the dense snapshot files, other models' included: the
    current one is rewritten by the removal itself, but a switch back to another model reads
    its file by content hash."""
    if removal.cache_keys and stores.ctx.paths.vectors_dir.is_dir():
        from indexing.dense_snapshot import erase_content

        erase_content(stores.ctx.paths.vectors_dir, removal.cache_keys)


# The type is traces.TraceEraser spelled out: traces.py imports this module, and an import
# back would close a circle.
ERASERS: dict[str, Callable[[Stores, Removal], None]] = {
    "sessions database": sessions,
    "retrieval log": retrieval_log,
    "embedding cache": embedding_cache,
    "dense snapshots": dense_snapshots,
    "conversation index": erase_conversations,
}
