"""Capacity: beyond the limit, the lowest-scoring active memories are archived (reversible).

Importance decay itself is computed at read time (`scoring.decayed_importance`); this module
only enforces the capacity limit, ranking memories by the query-independent part of the recall
score (decayed importance and freshness). Pinned memories are never archived.
"""

from __future__ import annotations

from assistant.memory.clock import days_between
from assistant.memory.model import Memory
from assistant.memory.recall import RecallSettings, effective_importance
from assistant.memory.scoring import freshness
from assistant.memory.store import MemoryStore


def retention_score(memory: Memory, now: float, settings: RecallSettings) -> float:
    weights = settings.weights
    last = max(memory.last_used_at or 0.0, memory.updated_at)
    return weights.importance * effective_importance(
        memory, now, settings.decay
    ) + weights.freshness * freshness(days_between(last, now))


def enforce_capacity(store: MemoryStore, capacity: int, settings: RecallSettings) -> list[str]:
    """Archive the lowest-scoring unpinned active memories above `capacity`; returns their ids."""
    active = store.list()
    excess = len(active) - capacity
    if excess <= 0:
        return []
    now = store.now()
    candidates = sorted(
        (m for m in active if not m.pinned),
        key=lambda m: (retention_score(m, now, settings), m.updated_at),
    )
    victims = [m.id for m in candidates[:excess]]
    store.archive(victims)
    return victims
