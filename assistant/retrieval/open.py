"""Wiring: a HybridRetriever (and its retrieval log) from an AppContext."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.retrieval.log import RetrievalLog
from assistant.retrieval.rerank import make_reranker

if TYPE_CHECKING:
    from assistant.retrieval.hybrid import HybridRetriever


def vector_location(ctx: AppContext) -> str:
    return ctx.config.store.vector_store.strip() or str(ctx.paths.vectors_dir)


def open_retriever(
    ctx: AppContext,
    *,
    origin: str = "cli",
    log: bool = True,
    complete: Callable[[str], str] | None = None,
) -> HybridRetriever:
    """Open the knowledge base with the configured embedder and build the retriever.

    `complete` is the chat model as `prompt -> text`, used only when
    retrieval.rewrite_queries is on. The caller closes `retriever.kb` and `retriever.log`
    (or uses `close_retriever`).
    """
    from assistant.retrieval.hybrid import HybridRetriever
    from indexing.knowledge import KnowledgeBase

    embedder = ctx.embedder()
    kb = KnowledgeBase.open(ctx.paths.knowledge_db, vector_location(ctx), embedder)
    retrieval_log = RetrievalLog.open(ctx.paths.retrieval_log_db) if log else None
    return HybridRetriever(
        kb,
        embedder,
        ctx.config.retrieval,
        reranker=make_reranker(ctx.config.retrieval.reranker, device=ctx.config.embedding.device),
        log=retrieval_log,
        origin=origin,
        complete=complete,
    )


def close_retriever(retriever: HybridRetriever) -> None:
    retriever.close()
    if isinstance(retriever.log, RetrievalLog):
        retriever.log.close()
    close = getattr(retriever.kb, "close", None)
    if close is not None:
        close()
