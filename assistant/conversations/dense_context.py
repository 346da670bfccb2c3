"""The dense ranking of conversation turns with their neighbours' meaning.

A question is often answered across adjacent turns ("what did Caroline research?" → "I'm
looking into adoption" / "which agencies?"). The keyword text of a turn already holds its
neighbours' words (`documents.turn_doc`); this is the dense analogue, at no embedding cost: a
turn's dense score is the mean of its own cosine and the cosine of its window (the sum of its
own vector and those of the turns just before and after it in its session, the same neighbours
whose words it holds), so a turn in a passage about the question rises over a lone turn that
only shares a phrase with it.

Measured on LoCoMo (bench/conversations.py, offline replay of the cached vectors; equal
weights, chosen a priori, not tuned; "A / B" = conversations 1-5 / 6-10): recall@5 / @10 with
the question as asked 0.727 / 0.800 → 0.733 / 0.805 (A 0.747 / 0.823 → 0.753 / 0.827, B 0.707 /
0.777 → 0.714 / 0.783); with the dense query's topic (`topic`) at the final fusion 0.740 / 0.817
→ 0.743 / 0.822 (A 0.754 / 0.831 both, B 0.725 / 0.804 → 0.732 / 0.814). Small, and inside the
noise (paired bootstrap 95% interval of the first gain at @10: -0.001 to +0.011), but never a
loss on either half, and it costs no embedding at import and a few milliseconds at search.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def context_scores(
    query: np.ndarray,
    candidates: Sequence[str],
    vectors: Mapping[str, np.ndarray],
    neighbours: Mapping[str, Sequence[str]],
    *,
    share: float,
) -> list[tuple[str, float, float]]:
    """`(unit id, dense score, own cosine)` of each candidate that has a vector, best score
    first: `(1 - share) * own cosine + share * window cosine`. A unit with no neighbour (a
    session summary, a lone turn) has a window of itself, so its score is its cosine."""
    q = _unit(np.asarray(query, dtype=np.float32))
    scored: list[tuple[str, float, float]] = []
    for unit_id in candidates:
        own = vectors.get(unit_id)
        if own is None:
            continue
        own = _unit(np.asarray(own, dtype=np.float32))
        window = own.copy()
        for near in neighbours.get(unit_id, ()):
            vector = vectors.get(near)
            if vector is not None:
                window += _unit(np.asarray(vector, dtype=np.float32))
        cosine = float(own @ q)
        around = float(_unit(window) @ q)
        scored.append((unit_id, (1.0 - share) * cosine + share * around, cosine))
    scored.sort(key=lambda t: -t[1])
    return scored


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
