"""The recall score and importance decay: pure functions of numbers and a clock."""

from __future__ import annotations

import math
from dataclasses import dataclass

FRESHNESS_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    similarity: float = 0.6
    importance: float = 0.3
    freshness: float = 0.1


@dataclass(frozen=True, slots=True)
class DecaySettings:
    after_days: float = 90.0  # unused this long before importance starts to decay
    half_life_days: float = 90.0  # then it halves every this many days
    floor: float = 0.05  # never below this: decay demotes, it does not delete


def freshness(days_since_update: float) -> float:
    return math.exp(-max(0.0, days_since_update) / FRESHNESS_DAYS)


def decayed_importance(importance: float, days_unused: float, settings: DecaySettings) -> float:
    """Importance after `days_unused` days without being recalled or changed.

    Computed from the stored importance at read time (never written back), so decay is gradual,
    never compounds, and stops the moment the memory is used again.
    """
    excess = days_unused - settings.after_days
    if excess <= 0:
        return importance
    factor: float = 0.5 ** (excess / settings.half_life_days)
    return max(min(importance, settings.floor), importance * factor)


def recall_score(
    similarity: float, importance: float, days_since_update: float, weights: ScoreWeights
) -> float:
    return (
        weights.similarity * similarity
        + weights.importance * importance
        + weights.freshness * freshness(days_since_update)
    )

