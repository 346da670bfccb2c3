"""Recency boost: recently edited files are more likely what the user is asking about.

A file modified now gets +`boost` (0.2 = +20 %) on its fused score, decaying linearly to
nothing at `days` old. Applied as a multiplier so it can reorder near-ties but never lift a
weak match above a much stronger one.
"""

from __future__ import annotations

SECONDS_PER_DAY = 86_400.0


def recency_boost(mtime: float, now: float, *, days: float = 7.0, boost: float = 0.2) -> float:
    """The fraction to add to the fused score (0 … boost) for a file modified at `mtime`."""
    if boost <= 0 or days <= 0:
        return 0.0
    age_days = max(0.0, now - mtime) / SECONDS_PER_DAY  # clock skew: future mtimes count as now
    if age_days >= days:
        return 0.0
    return boost * (1.0 - age_days / days)
