"""What retrieval returns: ranked hits that carry the evidence for their rank.

A hit keeps each retriever's own score and rank next to the fused score, so the UI, the
retrieval log and `brain search --json` can explain *why* a chunk was chosen instead of
showing one opaque number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from indexing.types import Chunk


@dataclass(frozen=True, slots=True)
class SearchHit:
    chunk: Chunk
    rank: int  # final position, 1-based
    score: float  # display relevance in [0, 1] (see scores.fused_display)
    fused: float  # fusion score after the recency boost (the ranking key without a reranker)
    # The fusion score (fusion.convex, 0-1) before the recency boost; the name is from the
    # RRF it once was, kept because the retrieval log stores it under that name.
    rrf: float
    cosine: float | None = None  # dense cosine similarity; None when dense did not return it
    dense_rank: int | None = None  # 1-based rank in the dense list
    bm25: float | None = None  # raw BM25 (higher is better); None when keyword did not return it
    keyword: float | None = None  # BM25 normalised to [0, 1] (see scores.keyword_scores)
    keyword_rank: int | None = None  # 1-based rank in the keyword list
    recency_boost: float = 0.0  # the fraction added to the fused score, 0.2 = +20 %
    rerank_score: float | None = None  # reranker relevance in [0, 1], when a reranker ran
    # On a file's best hit: its other matching chunks not shown (retrieval.per_file), else 0
    more_from_file: int = 0

    @property
    def chunk_id(self) -> str:
        return self.chunk.id

    @property
    def source(self) -> str:
        return self.chunk.source

    @property
    def heading(self) -> str:
        return self.chunk.heading


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    query: str  # what the user typed
    hits: list[SearchHit]
    low_confidence: bool  # the gate's verdict: the chat should say it does not know
    timings: dict[str, float] = field(default_factory=dict)  # stage -> milliseconds
    search_query: str = ""  # the query actually searched (after conversation-aware building)
    best_cosine: float | None = None  # the evidence the gate decided on (None: dense not
    # trusted for this query, e.g. Chinese on an English-only model)
    best_keyword: float | None = None
    log_id: int | None = None  # retrieval-log entry, for feedback (👍/👎)
    # Problems the user should know about (e.g. vectors missing: keyword-only search)
    warnings: tuple[str, ...] = ()
