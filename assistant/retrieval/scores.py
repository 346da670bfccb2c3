"""Scores people can read: cosine as a percentage, BM25 on 0–1, fused score on 0–1.

Raw BM25 depends on corpus size and query length, and a raw fusion value means nothing to a
reader. So:

- keyword: BM25 relative to the best keyword hit of this query, times the share of the
  query's terms the chunk actually contains. The top keyword hit for a query whose every term
  occurs in it scores 1.0; a chunk that only matched one common word of five scores low even
  when it is the best keyword hit. That makes the value usable by the confidence gate.
- score (the JSON "score" and the TUI's relevance bar): the fused score divided by the best
  possible fused score (first in every list, with the full recency boost), so it follows the
  ranking and 1.0 means "both retrievers ranked it first and the file was just modified"; an
  old file ranked first by both scores 1/(1 + retrieval.recency_boost) ≈ 0.83. With a
  reranker, its relevance (0–1) is the score.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

Tokenizer = Callable[[str], list[str]]


def term_coverage(query_terms: Collection[str], text_terms: Collection[str]) -> float:
    """Share of the distinct query terms present in the text (0 when the query has none)."""
    wanted = set(query_terms)
    if not wanted:
        return 0.0
    present = wanted & set(text_terms)
    return len(present) / len(wanted)


def relative_bm25(raw: float, best_raw: float) -> float:
    if best_raw <= 0 or raw <= 0:
        return 0.0
    return min(1.0, raw / best_raw)


def keyword_score(raw: float, best_raw: float, coverage: float) -> float:
    return round(relative_bm25(raw, best_raw) * max(0.0, min(1.0, coverage)), 6)


def fused_display(fused: float, best_possible: float) -> float:
    if best_possible <= 0:
        return 0.0
    return round(max(0.0, min(1.0, fused / best_possible)), 6)


def percent(similarity: float | None) -> str:
    """Cosine similarity as a percentage for people ("—" when the dense list missed it)."""
    if similarity is None:
        return "—"
    return f"{max(0.0, similarity) * 100:.0f}%"


def format_keyword(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"

