"""Reciprocal Rank Fusion: merge ranked lists by rank, not by incomparable raw scores.

score(d) = Σ_lists 1 / (k + rank_list(d)), rank from 1. Cosine and BM25 live on different
scales; ranks do not, which is why RRF needs no per-corpus calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fused:
    id: str
    score: float
    ranks: tuple[int | None, ...]  # 1-based rank in each input list, None when absent


def rrf(
    ranked_lists: Sequence[Sequence[str]],
    k: int = 60,
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


def max_rrf(list_count: int, k: int = 60) -> float:
    """The best possible fused score: first in every list."""
    return list_count / (k + 1)
