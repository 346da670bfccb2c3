"""The LlamaIndex face of `HybridRetriever`: a `BaseRetriever` returning `NodeWithScore`s.

Kept apart from hybrid.py because importing llama_index.core costs 1-3 s (its package
`__init__` loads indices, chat engines, memory…): `brain search` and the chat never need it,
only code that plugs our retriever into a LlamaIndex pipeline does, and pays for it there.
"""

from __future__ import annotations

from typing import Any, Protocol

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from assistant.retrieval.hit import RetrievalResult


class Searcher(Protocol):
    """What the LlamaIndex face needs of `HybridRetriever` (named by shape, not imported:
    hybrid.py imports this module, and an arrow back would close a circle)."""

    def search(self, query: str) -> RetrievalResult: ...


class LlamaRetriever(BaseRetriever):
    """Delegates to `HybridRetriever.search`; the full evidence stays available there."""

    def __init__(self, hybrid: Searcher) -> None:
        super().__init__()
        self.hybrid = hybrid

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return to_nodes(self.hybrid.search(query_bundle.query_str))


def to_nodes(result: RetrievalResult) -> list[NodeWithScore]:
    """LlamaIndex nodes carrying the chunk text and its citation metadata."""
    nodes: list[NodeWithScore] = []
    for hit in result.hits:
        c = hit.chunk
        metadata: dict[str, Any] = {
            "source": c.source,
            "heading": c.heading,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "page": c.page,
            "end_page": c.last_page,
            "language": c.language,
            "rank": hit.rank,
            "cosine": hit.cosine,
            "keyword": hit.keyword,
            "fused": hit.fused,
        }
        node = TextNode(
            id_=c.id,
            text=c.text,
            metadata=metadata,
            excluded_embed_metadata_keys=list(metadata),
            excluded_llm_metadata_keys=[k for k in metadata if k not in ("source", "heading")],
        )
        nodes.append(NodeWithScore(node=node, score=hit.score))
    return nodes
