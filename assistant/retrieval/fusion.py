"""Fusing ranked lists: a convex combination of normalised scores (knowledge search) and
Reciprocal Rank Fusion (conversation search).

`convex`: score(d) = w_dense · norm(cosine) + w_keyword · norm(bm25), each list min-max
normalised over its own candidates (absent = 0). Unlike RRF it keeps how far apart the scores
are: a BM25 #1 that towers over its list, or a dense list that cannot tell its candidates
apart, weigh accordingly. Chosen over RRF on tldr golden + SciFact train (bench/retrieval.py,
issue 17): a rank-only fusion let a strong keyword #1 absent from the dense list sink to rank
~60, and the old word-shape weight rule that compensated on tldr cost accuracy on SciFact.

`rrf`: score(d) = Σ_lists 1 / (k + rank_list(d)), rank from 1; no calibration at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

RRF_K = 60  # the constant of the RRF paper (Cormack et al., 2009) and most hybrid search tools


@dataclass(frozen=True, slots=True)
class Fused:
    id: str
    score: float
    ranks: tuple[int | None, ...]  # 1-based rank in each input list, None when absent


def rrf(
    ranked_lists: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[Fused]:
    """Fuse lists of ids (best first); ties keep the order of first appearance.

    Duplicate ids inside one list count once, at their best rank, and take no rank slot.
    """
    if k < 1:
        raise ValueError(f"rrf k must be >= 1, got {k}")
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError("one weight per ranked list")
    scores: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    for li, (ids, weight) in enumerate(zip(ranked_lists, weights, strict=True)):
        position = 0
        for item in ids:
            slot = ranks.setdefault(item, [None] * len(ranked_lists))
            if slot[li] is not None:
                continue  # a repeat neither scores again nor pushes later items down
            position += 1
            slot[li] = position
            scores[item] = scores.get(item, 0.0) + weight / (k + position)
    order = sorted(scores, key=lambda item: -scores[item])  # stable: first appearance on ties
    return [Fused(item, scores[item], tuple(ranks[item])) for item in order]


def max_rrf(list_count: int, k: int = RRF_K) -> float:
    """The best possible fused score: first in every list."""
    return list_count / (k + 1)


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores mapped onto [0, 1] over the list (all equal: all 1)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    if hi <= lo:
        return [1.0] * len(scores)
    return [(s - lo) / (hi - lo) for s in scores]


def convex(
    scored_lists: Sequence[Sequence[tuple[str, float]]],
    weights: Sequence[float],
) -> list[Fused]:
    """Fuse lists of (id, score) pairs, best first, by Σ weight · min-max-normalised score.

    Weights are divided by their sum, so the fused score lies in [0, 1] (1 = first in every
    list with weight). Duplicate ids inside one list count once, at their best rank. Ties keep
    the order of first appearance.
    """
    if len(weights) != len(scored_lists):
        raise ValueError("one weight per list")
    total = sum(max(0.0, w) for w in weights)
    if total <= 0:
        raise ValueError("at least one weight must be positive")
    scores: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    for li, (items, weight) in enumerate(zip(scored_lists, weights, strict=True)):
        unique: list[tuple[str, float]] = []
        for item, score in items:
            slot = ranks.setdefault(item, [None] * len(scored_lists))
            if slot[li] is not None:
                continue
            unique.append((item, score))
            slot[li] = len(unique)
        share = max(0.0, weight) / total
        for (item, _), norm in zip(unique, min_max([s for _, s in unique]), strict=True):
            scores[item] = scores.get(item, 0.0) + share * norm
    order = sorted(ranks, key=lambda item: -scores.get(item, 0.0))
    return [Fused(item, scores.get(item, 0.0), tuple(ranks[item])) for item in order]


def keep_within(ranked: Sequence[T], index: int, position: int) -> list[T]:
    """`ranked` with the item at `index` (0-based) moved up to `position` (1-based) if it sits
    lower; the items it passes move down one place."""
    items = list(ranked)
    if index < position:
        return items
    item = items.pop(index)
    items.insert(position - 1, item)
    return items
