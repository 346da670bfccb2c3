"""The confidence gate: decide whether retrieval found anything worth citing.

Low confidence when the best dense similarity is under a threshold AND no chunk is a strong
keyword match. Either signal alone is enough to answer: exact identifiers (`ABC-001`) often
embed poorly but match keywords perfectly, and paraphrases match densely but not lexically.

The default cosine threshold comes from `choose_threshold` on the tldr benchmark: the best
cosine of answerable golden questions versus off-corpus questions (see bench/retrieval.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    threshold: float  # cosine
    keyword_threshold: float
    balanced_accuracy: float  # mean over groups of (answered rate + refused rate) / 2
    true_positive_rate: float  # answerable questions that pass the gate (all groups)
    true_negative_rate: float  # off-corpus questions the gate flags (all groups)
    answerable: int
    unanswerable: int


Evidence = tuple[float | None, float | None]  # (best trusted cosine, best keyword score)


def choose_threshold(
    answerable: Sequence[Evidence] | Mapping[str, Sequence[Evidence]],
    unanswerable: Sequence[Evidence] | Mapping[str, Sequence[Evidence]],
    *,
    keyword_threshold: float | Sequence[float],
) -> GateCalibration:
    """The thresholds that best separate answerable from off-corpus questions.

    Each item is one question's (best cosine, best keyword score). Items may be grouped (e.g.
    by language, same keys on both sides): balanced accuracy — the mean of the answered and
    refused rates, so unequal set sizes do not bias it — is then averaged over the groups, so
    a small Chinese set counts as much as a large English one. Every midpoint between observed
    cosines is tried, with each given keyword threshold.
    """
    pos = answerable if isinstance(answerable, Mapping) else {"": answerable}
    neg = unanswerable if isinstance(unanswerable, Mapping) else {"": unanswerable}
    if set(pos) != set(neg) or not all(pos.values()) or not all(neg.values()):
        raise ValueError("need answerable and unanswerable questions in every group")
    kts = [keyword_threshold] if isinstance(keyword_threshold, (int, float)) else list(
        keyword_threshold
    )
    everything = [e for group in (*pos.values(), *neg.values()) for e in group]
    cosines = sorted({c for c, _ in everything if c is not None})
    candidates = [cosines[0] - 1e-3] if cosines else [0.0]
    candidates += [(a + b) / 2 for a, b in pairwise(cosines)]
    candidates += [cosines[-1] + 1e-3] if cosines else []

    def passed(items: Sequence[Evidence], t: float, kt: float) -> int:
        return sum(
            not is_low_confidence(c, k, cosine_threshold=t, keyword_threshold=kt)
            for c, k in items
        )

    rows = []
    for kt in kts:
        for t in candidates:
            per_group = [
                (passed(pos[g], t, kt) / len(pos[g]) + 1 - passed(neg[g], t, kt) / len(neg[g]))
                / 2
                for g in pos
            ]
            tpr = sum(passed(p, t, kt) for p in pos.values()) / sum(map(len, pos.values()))
            tnr = 1 - sum(passed(n, t, kt) for n in neg.values()) / sum(map(len, neg.values()))
            rows.append((sum(per_group) / len(per_group), tpr, tnr, t, kt))
    best = max(r[0] for r in rows)
    winners = [r for r in rows if abs(r[0] - best) < 1e-12]
    # Equal balanced accuracy: prefer answering (a wrong "I don't know" on a question the notes
    # do answer is the more annoying error), then the middle of that range for margin.
    top_tpr = max(r[1] for r in winners)
    winners = [r for r in winners if r[1] == top_tpr]
    bal, tpr, tnr, t, kt = winners[len(winners) // 2]
    return GateCalibration(
        threshold=round(t, 4),
        keyword_threshold=kt,
        balanced_accuracy=bal,
        true_positive_rate=tpr,
        true_negative_rate=tnr,
        answerable=sum(map(len, pos.values())),
        unanswerable=sum(map(len, neg.values())),
    )
