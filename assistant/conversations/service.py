"""Wiring: the conversation index of an `AppContext` (sessions database + Chroma collection)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.conversations.index import ConversationIndex
from assistant.sessions.service import open_sessions
from indexing import derived_index
from indexing.derived_index import VectorIndex

if TYPE_CHECKING:
    from assistant.context import AppContext
    from assistant.sessions.store import SessionStore


def collection_name(model_id: str, dimension: int) -> str:
    """One collection per embedding model: switching models never mixes vector spaces."""
    return derived_index.collection_name("conversations", model_id, dimension)


def conversation_vectors(ctx: AppContext) -> VectorIndex:
    """The conversation collection, beside the knowledge collection (or on the Chroma server);
    one made by another model starts afresh and the reconcile re-embeds (derived_index)."""
    embedder = ctx.embedder()
    location = ctx.config.store.vector_store or str(ctx.paths.vectors_dir)
    return derived_index.open_vectors(
        location, collection_name(embedder.model_id, embedder.dimension),
        model_id=embedder.model_id, dimension=embedder.dimension, what="conversation")


def open_conversations(ctx: AppContext, store: SessionStore | None = None) -> ConversationIndex:
    """The conversation index over `store` (default: the sessions database of `ctx`).

    Nothing heavy happens here: the embedding model and Chroma load on first use."""
    from assistant.private_embedding import PrivateEmbedder

    if store is None:
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
