"""The confidence gate: decide whether retrieval found anything worth citing.

Low confidence when the best dense similarity is under a threshold AND no chunk is a strong
keyword match. Either signal alone is enough to answer: exact identifiers (`ABC-001`) often
embed poorly but match keywords perfectly, and paraphrases match densely but not lexically.

The default cosine threshold comes from `choose_threshold` on the tldr benchmark: the best
cosine of answerable golden questions versus off-corpus questions (see bench/retrieval.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise


def is_low_confidence(
    best_cosine: float | None,
    best_keyword: float | None,
    *,
    cosine_threshold: float,
    keyword_threshold: float,
) -> bool:
    dense_ok = best_cosine is not None and best_cosine >= cosine_threshold
    keyword_ok = best_keyword is not None and best_keyword >= keyword_threshold
    return not (dense_ok or keyword_ok)


@dataclass(frozen=True, slots=True)
class GateCalibration:
    threshold: float
    balanced_accuracy: float
    true_positive_rate: float  # answerable questions that pass the gate
    true_negative_rate: float  # off-corpus questions the gate flags
    answerable: int
    unanswerable: int


def choose_threshold(
    answerable: Sequence[tuple[float | None, float | None]],
    unanswerable: Sequence[tuple[float | None, float | None]],
    *,
    keyword_threshold: float,
) -> GateCalibration:
    """The cosine threshold that best separates answerable from off-corpus questions.

    Each item is one question's (best cosine, best keyword score). Every distinct midpoint
    between observed cosines is tried with the keyword rule held fixed; the winner maximises
    balanced accuracy (mean of both recall rates, so unequal set sizes do not bias it).
    """
    if not answerable or not unanswerable:
        raise ValueError("need both answerable and unanswerable questions to calibrate")
    cosines = sorted({c for c, _ in (*answerable, *unanswerable) if c is not None})
    candidates = [cosines[0] - 1e-3] if cosines else [0.0]
    candidates += [(a + b) / 2 for a, b in pairwise(cosines)]
    candidates += [cosines[-1] + 1e-3] if cosines else []

    def rates(t: float) -> tuple[float, float]:
        tp = sum(
            not is_low_confidence(c, k, cosine_threshold=t, keyword_threshold=keyword_threshold)
            for c, k in answerable
        )
        tn = sum(
            is_low_confidence(c, k, cosine_threshold=t, keyword_threshold=keyword_threshold)
            for c, k in unanswerable
        )
        return tp / len(answerable), tn / len(unanswerable)

    scored = [(t, *rates(t)) for t in candidates]
    best = max((tpr + tnr) / 2 for _, tpr, tnr in scored)
    winners = [row for row in scored if abs((row[1] + row[2]) / 2 - best) < 1e-12]
    # Equal balanced accuracy: prefer answering (a wrong "I don't know" on a question the notes
    # do answer is the more annoying error), then the middle of that range for margin.
    top_tpr = max(row[1] for row in winners)
    winners = [row for row in winners if row[1] == top_tpr]
    t, tpr, tnr = winners[len(winners) // 2]
    return GateCalibration(
        threshold=round(t, 4),
        balanced_accuracy=best,
        true_positive_rate=tpr,
        true_negative_rate=tnr,
        answerable=len(answerable),
        unanswerable=len(unanswerable),
    )
