"""The confidence gate: decide whether retrieval found anything worth citing.

Low confidence when the best dense similarity is under a threshold AND no chunk is a strong
keyword match. Either signal alone is enough to answer: exact identifiers (`ABC-001`) often
embed poorly but match keywords perfectly, and paraphrases match densely but not lexically.
When the dense list is not trusted for the query (Chinese on an English-only model, see
weights.py) the keyword evidence stands alone and has its own threshold: with one witness
instead of two, the bar that keeps false alarms rare is a different one.

The evidence is the best cosine and the best normalised keyword score among the hits shown
(the gate vouches only for what it shows). The default thresholds come from `calibrate` on
both tuning sets (tldr golden + SciFact train answerable, off-corpus sets built from the
other corpus's questions; see bench/retrieval.py): the ones that catch the most off-corpus
questions while raising at most 2% false alarms on every answerable set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

Evidence = tuple[float | None, float | None]  # (best trusted cosine, best keyword score)


@dataclass(frozen=True, slots=True)
class GateThresholds:
    cosine: float  # best cosine at least this: confident
    keyword: float  # best normalised keyword score at least this: confident
    keyword_alone: float  # the keyword bar when there is no trusted cosine


def is_low_confidence(
    best_cosine: float | None, best_keyword: float | None, thresholds: GateThresholds
) -> bool:
    """`best_cosine` is None when the dense list is not trusted for this query."""
    if best_cosine is None:
        return best_keyword is None or best_keyword < thresholds.keyword_alone
    keyword_ok = best_keyword is not None and best_keyword >= thresholds.keyword
    return not (best_cosine >= thresholds.cosine or keyword_ok)


@dataclass(frozen=True, slots=True)
class Calibration:
    thresholds: GateThresholds
    false_alarm: dict[str, float]  # per answerable set: share flagged low confidence
    catch: dict[str, float]  # per off-corpus set: share flagged low confidence

    @property
    def worst_false_alarm(self) -> float:
        return max(self.false_alarm.values())

    @property
    def mean_catch(self) -> float:
        return sum(self.catch.values()) / len(self.catch)


def gate_rates(
    answerable: Mapping[str, Sequence[Evidence]],
    off_corpus: Mapping[str, Sequence[Evidence]],
    thresholds: GateThresholds,
) -> Calibration:
    """How often the gate with these thresholds says "low confidence", per set."""

    def flagged(items: Sequence[Evidence]) -> float:
        return sum(is_low_confidence(c, k, thresholds) for c, k in items) / len(items)

    return Calibration(
        thresholds,
        {name: flagged(items) for name, items in answerable.items()},
        {name: flagged(items) for name, items in off_corpus.items()},
    )


KEYWORD_GRID: tuple[float, ...] = tuple(round(0.2 + 0.025 * i, 3) for i in range(29))  # .2-.9


def calibrate(
    answerable: Mapping[str, Sequence[Evidence]],
    off_corpus: Mapping[str, Sequence[Evidence]],
    *,
    max_false_alarm: float = 0.02,
    keyword_grid: Sequence[float] = KEYWORD_GRID,
) -> Calibration:
    """The thresholds that catch the most off-corpus questions (mean over the sets, so a small
    set counts as much as a large one) while flagging at most `max_false_alarm` of every
    answerable set. Cosine candidates are the midpoints between observed values, keyword ones
    the grid; among equal catch rates the lowest worst false-alarm rate wins, then the lowest
    mean one, then the middle of the range for margin. When no choice meets the bound, the
    lowest worst false-alarm rate wins.
    """
    import numpy as np

    if not answerable or not off_corpus or not all(answerable.values()) or not all(
        off_corpus.values()
    ):
        raise ValueError("need answerable and off-corpus questions in every set")
    everything = [e for group in (*answerable.values(), *off_corpus.values()) for e in group]
    cosines = sorted({c for c, _ in everything if c is not None})
    candidates = [cosines[0] - 1e-3] if cosines else [0.0]
    candidates += [(a + b) / 2 for a, b in pairwise(cosines)]
    candidates += [cosines[-1] + 1e-3] if cosines else []
    cos_t = np.round(np.array(candidates), 4)
    kw = np.array(keyword_grid, dtype=float)
    groups = [*answerable.values(), *off_corpus.values()]
    # flagged[s][a, k, c]: share of set s flagged with keyword_alone grid[a], keyword grid[k],
    # cosine cos_t[c]. Items without a cosine depend on `a` only, the others on (k, c) only.
    flagged = []
    for items in groups:
        alone = np.array([k if k is not None else -1.0 for c, k in items if c is None])
        alone_low = (alone[None, :] < kw[:, None]).sum(axis=1)  # per a
        paired = [(c, k if k is not None else -1.0) for c, k in items if c is not None]
        pair_low = np.zeros((len(kw), len(cos_t)))
        if paired:
            pc = np.array([c for c, _ in paired])
            pk = np.array([k for _, k in paired])
            for ki, kt in enumerate(kw):
                weak = np.sort(pc[pk < kt])  # no strong keyword: the cosine decides
                pair_low[ki] = np.searchsorted(weak, cos_t, side="left")
        flagged.append((alone_low[:, None, None] + pair_low[None, :, :]) / len(items))
    n_pos = len(answerable)
    alarms = np.max(flagged[:n_pos], axis=0)
    mean_alarms = np.mean(flagged[:n_pos], axis=0)
    catch = np.mean(flagged[n_pos:], axis=0)
    bound = max(max_false_alarm, float(alarms.min())) + 1e-12
    allowed = alarms <= bound
    top = float(catch[allowed].max())
    best = allowed & (catch >= top - 1e-12)
    fewest = float(alarms[best].min())
    best &= alarms <= fewest + 1e-12
    fewest_mean = float(mean_alarms[best].min())
    best &= mean_alarms <= fewest_mean + 1e-12
    choices = np.argwhere(best)
    a, k, c = (int(i) for i in choices[len(choices) // 2])
    return gate_rates(
        answerable, off_corpus, GateThresholds(float(cos_t[c]), float(kw[k]), float(kw[a]))
    )
