"""Reconciliation: decide whether a new statement adds, updates or repeats a memory.

- Same key as an active memory: identical text → skip; otherwise the newest statement wins: a new
  memory is stored and the old one becomes `superseded`, linked to it (nothing is deleted).
- Otherwise, similarity ≥ 0.9 to any active memory → skip as a duplicate.
- Otherwise → add.
Writes pass the version the decision was based on, so a memory the user edited meanwhile is
left as the user wrote it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum

from assistant.memory.model import Actor, Memory, MemoryStatus, NewMemory
from assistant.memory.store import ConcurrentChange, MemoryStore

log = logging.getLogger(__name__)

DUPLICATE_SIMILARITY = 0.9


class Action(StrEnum):
    ADD = "add"
    UPDATE = "update"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    reason: str
    target: Memory | None = None  # the memory updated or duplicated


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip(".。") == " ".join(b.lower().split()).rstrip(".。")


def decide(
    store: MemoryStore,
    candidate: NewMemory,
    *,
    snapshot: dict[str, Memory] | None = None,
    threshold: float = DUPLICATE_SIMILARITY,
) -> Decision:
    """`snapshot` (id → memory as read earlier) pins the versions the decision is based on."""
    def as_seen(memory: Memory) -> Memory:
        return snapshot.get(memory.id, memory) if snapshot else memory

    if candidate.key:
        same_key = [as_seen(m) for m in store.list(key=candidate.key)]
        for memory in same_key:
            if _same_text(memory.text, candidate.text):
                return Decision(Action.SKIP, "already known", memory)
        if same_key:
            return Decision(Action.UPDATE, f"newer value for {candidate.key}", same_key[0])
    store.sync_vectors()
    vector = store.embedder().embed_query(candidate.text)
    hits = store.dense_candidates(vector, 5)
    found = store.get_many([i for i, _ in hits])
    active = [m for i, _ in hits if (m := found.get(i)) and m.status is MemoryStatus.ACTIVE]
    if active:
        # The index holds search text (with key, date, context); duplicates are judged on the
        # memories' own words, embedded again (cheap: the embedding cache has seen them).
        texts = store.embedder().embed_documents([m.text for m in active])
        for memory, text_vector in zip(active, texts, strict=True):
            similarity = float(text_vector @ vector)
            if similarity >= threshold or _same_text(memory.text, candidate.text):
                return Decision(Action.SKIP, f"duplicate (similarity {similarity:.2f})",
                                as_seen(memory))
    return Decision(Action.ADD, "new")


def apply(
    store: MemoryStore, candidate: NewMemory, decision: Decision, *, actor: Actor
) -> Memory | None:
    """Carry out a decision; returns the stored memory, or None if nothing was written because
    the user changed the memory meanwhile. A refusal (SecretRejected, NotGrounded) is raised
    for the caller to report."""
    try:
        if decision.action is Action.ADD:
            return store.add(candidate, actor=actor)
        if decision.action is Action.UPDATE and decision.target is not None:
            return store.supersede(
                decision.target.id, candidate, actor=actor,
                expected_version=decision.target.version,
            )
    except ConcurrentChange as exc:
        log.info("memory not updated, the user changed it meanwhile: %s", exc)
    return None
