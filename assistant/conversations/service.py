"""Wiring: the conversation index of an `AppContext` (sessions database + Chroma collection)."""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING

from assistant.conversations.index import ConversationIndex, VectorIndex

if TYPE_CHECKING:
    from assistant.context import AppContext
    from assistant.sessions.store import SessionStore

log = logging.getLogger(__name__)


def collection_name(model_id: str, dimension: int) -> str:
    """One collection per embedding model: switching models never mixes vector spaces."""
    digest = hashlib.sha256(f"{model_id}\n{dimension}".encode()).hexdigest()[:12]
    return f"conversations-{digest}"


def conversation_vectors(ctx: AppContext) -> VectorIndex:
    """The conversation collection, beside the knowledge collection (or on the Chroma server)."""
    from indexing.vector_errors import EmbeddingModelMismatch
    from indexing.vectors import VectorStore

    embedder = ctx.embedder()
    location = ctx.config.store.vector_store or str(ctx.paths.vectors_dir)
    name = collection_name(embedder.model_id, embedder.dimension)
    try:
        return VectorStore.open(location, name, model_id=embedder.model_id,
                                dimension=embedder.dimension)
    except EmbeddingModelMismatch:  # derived from SQLite: start afresh, reconcile re-embeds
        log.info("conversation vectors were made with another model; rebuilding them")
        return VectorStore.open(location, name, model_id=embedder.model_id,
                                dimension=embedder.dimension, recreate=True)


def open_conversations(ctx: AppContext, store: SessionStore | None = None) -> ConversationIndex:
    """The conversation index over `store` (default: the sessions database of `ctx`).

    Nothing heavy happens here: the embedding model and Chroma load on first use."""
    from assistant.private_embedding import PrivateEmbedder

    if store is None:
        from assistant.sessions.service import open_sessions

        store = open_sessions(ctx)
    index: ConversationIndex | None = None

    def purge() -> None:
        assert index is not None
        purge_conversations(ctx, index)

    # Turns are the user's words: embedded without writing the disk cache (private_embedding).
    index = ConversationIndex(store, embedder=lambda: PrivateEmbedder(ctx.embedder()),
                              vectors=lambda: conversation_vectors(ctx), purge=purge)
    return index


def has_vectors(ctx: AppContext) -> bool:
    """Whether a vector store exists (opening one only to purge it would create it)."""
    return bool(ctx.config.store.vector_store) or ctx.paths.vectors_dir.exists()


def purge_conversations(ctx: AppContext, index: ConversationIndex) -> None:
    if has_vectors(ctx):
        vectors = index.vectors()
        compact = getattr(vectors, "compact", None)
        if compact is not None:
            compact()
    index.store.scrub()
