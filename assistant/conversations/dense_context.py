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
    present = list(dict.fromkeys(c for c in candidates if c in vectors))
    if not present:
        return []
    keys = list(dict.fromkeys([*present, *(n for c in present for n in neighbours.get(c, ())
                                           if n in vectors)]))
    row = {k: n for n, k in enumerate(keys)}
    matrix = np.stack([np.asarray(vectors[k], dtype=np.float32) for k in keys])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms > 0, norms, 1.0)
    q = _unit(np.asarray(query, dtype=np.float32))
    own = matrix[: len(present)]  # the candidates come first in `keys`
    window = own.copy()
    for n, unit_id in enumerate(present):
        for near in neighbours.get(unit_id, ()):
            if near in row:
                window[n] += matrix[row[near]]
    cosine = own @ q
    sizes = np.linalg.norm(window, axis=1)
    around = (window @ q) / np.where(sizes > 0, sizes, 1.0)
    score = (1.0 - share) * cosine + share * around
    order = np.argsort(-score, kind="stable")
    return [(present[n], float(score[n]), float(cosine[n])) for n in order]


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
