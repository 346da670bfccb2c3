"""Recall scoring, decay and capacity math with a fake clock; reconciliation decisions."""

from __future__ import annotations

import math

import pytest

from assistant.memory import reconcile
from assistant.memory.decay import enforce_capacity
from assistant.memory.model import Actor, MemoryStatus, MemoryType, NewMemory
from assistant.memory.recall import RecallSettings, effective_importance, recall, search
from assistant.memory.scoring import (
    DecaySettings,
    ScoreWeights,
    decayed_importance,
    freshness,
    recall_score,
)
from assistant.memory.store import MemoryStore


def test_score_formula() -> None:
    weights = ScoreWeights(0.6, 0.3, 0.1)
    assert recall_score(0.5, 0.8, 0, weights) == pytest.approx(0.3 + 0.24 + 0.1)
    assert recall_score(0.5, 0.8, 30, weights) == pytest.approx(0.3 + 0.24 + 0.1 / math.e)
    assert freshness(-5) == 1.0
    assert recall_score(1, 1, 0, ScoreWeights(1, 0, 0)) == 1.0


def test_decay_is_gradual_and_starts_after_90_days() -> None:
    settings = DecaySettings(after_days=90, half_life_days=90, floor=0.05)
    assert decayed_importance(0.8, 89, settings) == 0.8
    assert decayed_importance(0.8, 90, settings) == 0.8
    assert decayed_importance(0.8, 135, settings) == pytest.approx(0.8 * 0.5**0.5)
    assert decayed_importance(0.8, 180, settings) == pytest.approx(0.4)
    assert decayed_importance(0.8, 10_000, settings) == pytest.approx(0.05)
    assert decayed_importance(0.01, 10_000, settings) == pytest.approx(0.01)


def test_decay_follows_the_clock_and_use_resets_it(memory_store: MemoryStore, fake_clock) -> None:
    m = memory_store.add(NewMemory("The user keeps bees", importance=0.8))
    settings = DecaySettings()
    fake_clock.advance(days=180)
    assert effective_importance(memory_store.get(m.id), memory_store.now(), settings) == (
        pytest.approx(0.4))
    memory_store.mark_used([m.id])
    used = memory_store.get(m.id)
    assert used.use_count == 1 and used.last_used_at == memory_store.now()
    assert effective_importance(used, memory_store.now(), settings) == 0.8
    memory_store.pin(m.id)
    fake_clock.advance(days=400)
    assert effective_importance(memory_store.get(m.id), memory_store.now(), settings) == 0.8


def test_search_ranks_by_the_weighted_score(memory_store: MemoryStore, fake_clock) -> None:
    a = memory_store.add(NewMemory("The user plays tennis every weekend", importance=0.2))
    fake_clock.advance(days=60)
    b = memory_store.add(NewMemory("The user plays tennis every weekend with Sam",
                                   importance=0.9))
    memory_store.add(NewMemory("The user dislikes olives", importance=0.9))
    results = search(memory_store, "tennis weekend", top_k=2)
    assert [r.memory.id for r in results] == [b.id, a.id]
    top = results[0]
    expected = recall_score(top.similarity, 0.9, 0, ScoreWeights())
    assert top.score == pytest.approx(expected)
    # Weights come from settings: with only freshness, the newer memory must win regardless.
    only_fresh = RecallSettings(weights=ScoreWeights(0, 0, 1))
    assert search(memory_store, "tennis", top_k=1, settings=only_fresh)[0].memory.id != a.id


def test_keyword_candidates_are_found_even_if_dense_misses(memory_store: MemoryStore) -> None:
    target = memory_store.add(NewMemory("Dr. Okonkwo is the user's dentist"))
    for i in range(60):
        memory_store.add(NewMemory(f"The user visited city number {i} last year"))
    results = search(memory_store, "Okonkwo", top_k=3,
                     settings=RecallSettings(candidates=5))
    assert results[0].memory.id == target.id


def test_keyword_only_candidates_get_their_exact_cosine(memory_store: MemoryStore,
                                                         memory_vectors) -> None:
    target = memory_store.add(NewMemory("Dr. Okonkwo is the user's dentist"))
    for i in range(30):
        memory_store.add(NewMemory(f"The user visited city number {i} last year"))
    query = "Okonkwo visited city number last year"
    query_vector = memory_store.embedder().embed_query(query)
    assert target.id not in [i for i, _ in memory_store.dense_candidates(query_vector, 5)]
    keyword = dict(memory_store.keyword_candidates(query, 50))
    results = search(memory_store, query, top_k=40, settings=RecallSettings(candidates=5))
    [hit] = [r for r in results if r.memory.id == target.id]
    exact = max(0.0, float(memory_vectors.data[target.id] @ query_vector))
    expected = 0.5 * exact + 0.5 * keyword[target.id] / max(keyword.values())
    assert hit.similarity == pytest.approx(expected)


def test_recall_leaves_memories_unrelated_to_the_question_out(
        memory_store: MemoryStore) -> None:
    """Issue 23: "Summarize this text in three bullets" carried 6 of 7 memories."""
    pinned = memory_store.add(NewMemory("My wife's birthday is March 3", pinned=True))
    for text in ("Kayak stored in lake house garage", "Backs up laptop with rsync on Fridays",
                 "Prefers green tea over coffee", "Plays chess on Sunday evenings"):
        memory_store.add(NewMemory(text))
    items = recall(memory_store, "Summarize this text in three bullets")
    assert [r.memory.id for r in items] == [pinned.id]
    related = recall(memory_store, "when does the laptop backup with rsync run")
    assert [r.memory.text for r in related][1:] == ["Backs up laptop with rsync on Fridays"]


def test_recall_puts_pinned_and_profile_facts_before_the_relevant(
        memory_store: MemoryStore) -> None:
    pinned = memory_store.add(NewMemory("The user is allergic to penicillin", pinned=True))
    profile = memory_store.add(NewMemory("The user is called Mara", key="name", confidence=0.95))
    unsure = memory_store.add(NewMemory("The user may live in Rome", key="city", confidence=0.6))
    relevant = memory_store.add(NewMemory("The user cooks pasta carbonara"))
    items = recall(memory_store, "what pasta should the user cook")
    by_id = {r.memory.id: r.reason for r in items}
    assert by_id[pinned.id] == "pinned" and by_id[profile.id] == "profile"
    assert by_id[relevant.id] == "relevant"
    assert [r.memory.id for r in items][:2] == [pinned.id, profile.id]
    # Recall only proposes: the prompt decides what fits, and only that is marked used.
    assert all(memory_store.get(i).use_count == 0 for i in by_id)
    assert unsure.id not in by_id or by_id[unsure.id] == "relevant"
    assert [r.memory.id for r in recall(memory_store, "pasta", top_k=0)] == [
        pinned.id, profile.id]


def test_capacity_archives_lowest_never_pinned_and_is_reversible(
        memory_store: MemoryStore, fake_clock) -> None:
    low = memory_store.add(NewMemory("The user once tried sushi", importance=0.1, pinned=True))
    old = memory_store.add(NewMemory("The user liked a song in 2019", importance=0.2))
    fake_clock.advance(days=200)
    keep = [memory_store.add(NewMemory(f"The user's project {i} uses Rust", importance=0.7))
            for i in range(3)]
    assert enforce_capacity(memory_store, 5, RecallSettings()) == []
    assert enforce_capacity(memory_store, 4, RecallSettings()) == [old.id]
    assert memory_store.get(old.id).status is MemoryStatus.ARCHIVED
    assert memory_store.get(low.id).status is MemoryStatus.ACTIVE
    assert set(enforce_capacity(memory_store, 1, RecallSettings())) == {k.id for k in keep}
    assert [m.id for m in memory_store.list()] == [low.id]  # pinned survives any limit
    assert memory_store.undo(old.id).status is MemoryStatus.ACTIVE


def test_reconcile_duplicate_update_and_different_keys(memory_store: MemoryStore) -> None:
    base = memory_store.add(NewMemory("The user works at Acme", key="employer"))
    dup = NewMemory("the user works at acme.", key="employer")
    assert reconcile.decide(memory_store, dup).action is reconcile.Action.SKIP
    near = NewMemory("The user works at Acme!")  # no key, same words: similarity ≥ 0.9
    decision = reconcile.decide(memory_store, near)
    assert decision.action is reconcile.Action.SKIP
    assert decision.target is not None and decision.target.id == base.id
    other_key = NewMemory("The user lives in Acme Springs", key="home_city")
    assert reconcile.decide(memory_store, other_key).action is reconcile.Action.ADD
    newer = NewMemory("The user works at Globex", key="employer",
                      evidence=("I work at Globex now",))
    decision = reconcile.decide(memory_store, newer)
    assert decision.action is reconcile.Action.UPDATE
    assert decision.target is not None and decision.target.id == base.id
    stored = reconcile.apply(memory_store, newer, decision, actor=Actor.ASSISTANT)
    assert stored is not None and memory_store.get(base.id).superseded_by == stored.id
    assert [m.text for m in memory_store.list(key="employer")] == ["The user works at Globex"]
    assert memory_store.get(base.id).type is MemoryType.FACT


def test_recall_puts_the_profile_first(memory_store: MemoryStore) -> None:
    from assistant.memory.model import Actor

    memory_store.add(NewMemory("The user's favourite pasta is carbonara"))
    assert all(r.reason != "user-profile" for r in recall(memory_store, "pasta"))
    memory_store.set_profile("Mara, a nurse in Leeds who likes short answers.",
                             actor=Actor.USER)
    items = recall(memory_store, "pasta")
    assert items[0].reason == "user-profile" and items[0].memory.id == "profile"
    assert items[0].memory.text.startswith("Mara")
    assert items[1].memory.text.endswith("carbonara")


def test_profile_refresh_writes_the_models_profile(memory_store: MemoryStore) -> None:
    from assistant.memory.service import MemoryService

    calls = []

    def model(messages, schema):
        calls.append(messages)
        return '{"profile": "A person who likes carbonara."}'

    service = MemoryService(memory_store, chat_fn=model)
    empty = service.refresh_profile()  # no memories yet: nothing to ask the model
    assert empty.error and calls == []
    memory_store.add(NewMemory("The user's favourite pasta is carbonara"))
    refreshed = service.refresh_profile()
    assert refreshed.error is None and refreshed.profile.text == "A person who likes carbonara."
    assert len(calls) == 1 and "carbonara" in calls[0][0]["content"]


def test_a_search_reads_the_memory_table_only_through_indexes(memory_store: MemoryStore) -> None:
    # issue 25: the vector catch-up on each search scanned the whole table (9 ms at 10k).
    for i in range(30):
        memory_store.add(NewMemory(text=f"user likes walking dog number {i}"))
    memory_store.archive([m.id for m in memory_store.list()][:5])
    statements: list[str] = []
    memory_store.conn.set_trace_callback(statements.append)
    try:
        assert search(memory_store, "walking dog", top_k=5)
    finally:
        memory_store.conn.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert any("vec_state" in s for s in reads)  # the catch-up ran
    for sql in reads:
        plan = " ".join(str(row[-1]) for row in memory_store.conn.execute(
            "EXPLAIN QUERY PLAN " + sql))
        assert "SCAN memories" not in plan, (sql, plan)


def test_recall_reads_no_pass_over_the_memories(memory_store: MemoryStore) -> None:
    # issue 25: recall listed every active memory to find the profile facts and the pinned
    # ones (~1 s a chat turn at 10k memories); the status index alone is such a pass.
    for i in range(30):
        memory_store.add(NewMemory(text=f"user likes walking dog number {i}"))
    memory_store.add(NewMemory("The user is allergic to penicillin", pinned=True))
    memory_store.add(NewMemory("The user is called Mara", key="name", confidence=0.95))
    statements: list[str] = []
    memory_store.conn.set_trace_callback(statements.append)
    try:
        reasons = {r.reason for r in recall(memory_store, "walking dog")}
    finally:
        memory_store.conn.set_trace_callback(None)
    assert {"pinned", "profile", "relevant"} <= reasons
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    for sql in reads:
        plan = " ".join(str(row[-1]) for row in memory_store.conn.execute(
            "EXPLAIN QUERY PLAN " + sql))
        assert "SCAN memories" not in plan and "memories_status" not in plan, (sql, plan)
