"""Wiring: a HybridRetriever from an AppContext (its retrieval log is the caller's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.knowledge_service import open_knowledge, vector_location
from assistant.retrieval.rerank import make_reranker
from indexing import chroma_clients

if TYPE_CHECKING:
    from assistant.retrieval.hybrid import HybridRetriever
    from assistant.retrieval.log import RetrievalLog


def open_retriever(ctx: AppContext, *, origin: str = "cli",
                   log: RetrievalLog | None = None) -> HybridRetriever:
    """Open the knowledge base with the configured embedder and build the retriever; its
    searches are appended to `log` (None: not logged), which stays the caller's to close (one
    log per process: `Services.retrieval_log`).

    Close with `close_retriever`. Raises `ReembedNeeded` (a HintedError) when the index was
    built with another embedding model (re-sync needed).
    """
    from assistant.retrieval.hybrid import HybridRetriever
    from indexing.embedder import preload

    # A cold start's slow loads side by side: the embedding model, and Chroma unless the
    # index's dense snapshot answers without it.
    preload(ctx.embedder())
    kb = open_knowledge(ctx)
    if not kb.searches_without_store:
        chroma_clients.warm(vector_location(ctx))
    try:
        if kb.reembed_needed:
            from indexing.knowledge_types import ReembedNeeded

            assert kb.embedder is not None
            raise ReembedNeeded(kb.indexed_model or "?", kb.embedder.model_id)
    except BaseException:
        kb.close()
        raise
    return HybridRetriever(
        kb,
        ctx.embedder(),
        ctx.config.retrieval,
        reranker=make_reranker(ctx.config.retrieval.reranker, device=ctx.config.embedding.device),
        log=log,
        origin=origin,
    )


def close_retriever(retriever: HybridRetriever) -> None:
    """Close the retriever and its knowledge base; its log is its opener's."""
    retriever.close()
    close = getattr(retriever.kb, "close", None)
    if close is not None:
        close()
