"""Finding the memories relevant to a question.

Candidates come from both the dense index (Chroma) and the keyword index (FTS5 BM25) over
active memories. Their similarity is a blend of the cosine and the max-normalised BM25 score,
so a memory that shares rare words with the question (names, places, "yoga") is found even
when the embedding misses it. The final score is
`w_sim·similarity + w_imp·importance(decayed) + w_fresh·exp(-days_since_update/30)`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from assistant.logfile import TO_USER
from assistant.memory.clock import days_between
from assistant.memory.model import Memory, MemoryStatus, MemoryType, Profile, RecalledMemory
from assistant.memory.scoring import (
    DecaySettings,
    ScoreWeights,
    decayed_importance,
    recall_score,
)
from assistant.memory.store import PROFILE_ID, MemoryStore
from indexing.vector_errors import VectorStoreDamaged, VectorStoreReadOnly

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """Which searched memories are relevant enough for the chat prompt: a cosine to the
    question of at least `min_cosine`, or the question's words matched about as strongly as
    the best keyword candidate (`keyword`, relative BM25) with a meaning not far off
    (`keyword_cosine`). Without readable vectors the keyword bar stands alone. Like the
    knowledge confidence gate, but per memory: each one costs prompt tokens on every turn, and
    an unrelated one invites the model to mention it ("Summarize this text" answered with the
    user's birthday). Chosen on LoCoMo (bench/memory_prompt.py: 1,536 questions, each also
    asked of the next conversation's memories): with no floor (the top 5 always) precision 0.082,
    evidence recall 0.530, off-topic questions carrying no memory 0%; this floor 0.163 / 0.510 /
    66% (conversations 1-5: 0.16 / 0.54, 6-10: 0.16 / 0.49). A bar of 0.4 without the keyword
    exception: 0.191 / 0.471 / 87% (a tenth of the recall lost); the exception from cosine 0.2
    lets half the off-topic questions through."""

    min_cosine: float = 0.35
    keyword: float = 1.0
    keyword_cosine: float = 0.3

    def admits(self, item: RecalledMemory) -> bool:
        if item.cosine is None:
            return item.keyword >= self.keyword
        if item.cosine >= self.min_cosine:
            return True
        return item.keyword >= self.keyword and item.cosine >= self.keyword_cosine


@dataclass(frozen=True, slots=True)
class RecallSettings:
    top_k: int = 5
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    decay: DecaySettings = field(default_factory=DecaySettings)
    candidates: int = 50
    keyword_share: float = 0.5  # weight of normalised BM25 inside `similarity`
    profile_confidence: float = 0.9  # facts/preferences at least this sure are always included
    floor: RelevanceFloor | None = field(default_factory=RelevanceFloor)  # None: top_k always


def _days_unused(memory: Memory, now: float) -> float:
    last = max(memory.last_used_at or 0.0, memory.updated_at)
    return days_between(last, now)


def effective_importance(memory: Memory, now: float, decay: DecaySettings) -> float:
    if memory.pinned:
        return memory.importance
    return decayed_importance(memory.importance, _days_unused(memory, now), decay)


def search(
    store: MemoryStore, query: str, *, top_k: int, settings: RecallSettings = RecallSettings()
) -> list[RecalledMemory]:
    """Active memories ranked by the recall score (no forced items, no side effects)."""
    if top_k <= 0 or not query.strip():
        return []
    pool = max(settings.candidates, top_k * 3)
    query_vector = store.embedder().embed_query(query)
    try:
        # dense_candidates catches the vectors up first (two index probes when nothing is due).
        dense: dict[str, float] = dict(store.dense_candidates(query_vector, pool))
        vectors_usable = True
    except (VectorStoreDamaged, VectorStoreReadOnly) as exc:  # keywords go on; said
        log.warning("%s Recalling memories by keywords only; to repair: %s", exc.message,
                    exc.hint, extra=TO_USER)
        dense, vectors_usable = {}, False
    keyword: dict[str, float] = dict(store.keyword_candidates(query, pool))
    ids = list(dict.fromkeys([*dense, *keyword]))
    memories = {
        i: m for i, m in store.get_many(ids).items() if m.status is MemoryStatus.ACTIVE
    }
    if not memories:
        return []
    # Keyword-only candidates were not among the dense top-`pool`: read their stored vectors
    # for the exact cosine (worth +1 pt recall@5 on LoCoMo over assuming the lowest one seen,
    # which stays the fallback for a vector not written yet).
    floor_cos = min(dense.values()) if dense else 0.0
    if vectors_usable:
        dense.update(store.cosines(query_vector, [i for i in memories if i not in dense]))
    top_bm25 = max(keyword.values()) if keyword else 0.0
    share = settings.keyword_share if keyword else 0.0
    now = store.now()
    ranked: list[RecalledMemory] = []
    for memory_id, memory in memories.items():
        cos = max(0.0, dense.get(memory_id, floor_cos))
        kw = keyword.get(memory_id, 0.0) / top_bm25 if top_bm25 > 0 else 0.0
        similarity = (1 - share) * cos + share * kw
        score = recall_score(
            similarity,
            effective_importance(memory, now, settings.decay),
            days_between(memory.updated_at, now),
            settings.weights,
        )
        if math.isfinite(score):
            cosine = dense.get(memory_id) if vectors_usable else None
            ranked.append(RecalledMemory(memory, score, similarity, "relevant", cosine, kw))
    ranked.sort(key=lambda r: (-r.score, r.memory.id))
    return ranked[:top_k]


def recall(
    store: MemoryStore,
    query: str,
    *,
    settings: RecallSettings = RecallSettings(),
    top_k: int | None = None,
) -> list[RecalledMemory]:
    """Candidates for the chat prompt, most important first: the user profile (id "profile",
    reason "user-profile"), pinned memories, sure profile facts, then those of the `top_k` most
    relevant that pass `settings.floor` (none, for a question about nothing remembered).

    No token budget here: the prompt assembly (assistant/chat/budget.py) is the one place that
    fits memories into the context window, and the caller marks as used only what it kept
    (`MemoryStore.mark_used`)."""
    chosen: list[RecalledMemory] = []
    seen: set[str] = set()

    def take(item: RecalledMemory) -> None:
        if item.memory.id not in seen:
            chosen.append(item)
            seen.add(item.memory.id)

    now = store.now()
    profile = store.profile()
    if profile.text:
        take(RecalledMemory(profile_memory(profile, now), 1.0, 0.0, "user-profile"))
    always = list(store.list(pinned=True))
    always += sorted(
        store.sure_keyed(settings.profile_confidence),
        key=lambda m: -effective_importance(m, now, settings.decay),
    )
    for memory in always:
        take(RecalledMemory(memory, 1.0, 0.0, "pinned" if memory.pinned else "profile"))
    k = settings.top_k if top_k is None else top_k
    for item in search(store, query, top_k=k, settings=settings):
        if settings.floor is None or settings.floor.admits(item):
            take(item)
    return chosen


def profile_memory(profile: Profile, now: float) -> Memory:
    """The user profile in the shape of a memory, so the prompt and UI can show it alike."""
    when = profile.updated_at or now
    return Memory(
        id=PROFILE_ID, type=MemoryType.FACT, key="profile", text=profile.text, confidence=1.0,
        importance=1.0, status=MemoryStatus.ACTIVE, pinned=True, created_at=when,
        updated_at=when, last_used_at=None, use_count=0, source="profile",
    )
