"""The agent event log: writes, filters, blended search, removal without a trace."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.events.erase import forget_all_events, remove_events
from assistant.events.matrix import EventMatrix, Filters
from assistant.events.model import EventError, EventType, NewEvent
from assistant.events.search import EventWeights, search_events
from assistant.events.store import EventStore
from tests.fakes import HashEmbedder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    s = EventStore.open(tmp_path / "events.sqlite3")
    yield s
    s.close()


def _embed_all(store: EventStore, embedder: HashEmbedder) -> None:
    batch = store.pending(1000, model_id=embedder.model_id)
    vectors = embedder.embed_documents([t for _, t in batch])
    store.store_vectors(embedder.model_id, {i: vectors[n] for n, (i, _) in enumerate(batch)})


def test_log_list_get_and_filters(store: EventStore) -> None:
    now = time.time()
    goal = store.log(NewEvent(EventType.GOAL, "fix the login bug", importance=0.9,
                              agent="claude-code", session="s1", ts=now - 3 * 86_400))
    step = store.log(NewEvent(EventType.ACTION, "ran pytest tests/login", session="s1",
                              parent=goal.id, ts=now - 3600))
    store.log(NewEvent(EventType.ERROR, "ImportError in auth.py", session="s2", ts=now))
    assert [e.id for e in store.list()][-1] == goal.id  # newest first
    assert store.get(step.id[:6]).parent == goal.id
    assert [e.type for e in store.list(types=[EventType.ERROR])] == [EventType.ERROR]
    assert [e.id for e in store.list(since=now - 7200)] != []
    assert {e.id for e in store.list(since=now - 7200, until=now - 60)} == {step.id}
    assert [e.id for e in store.list(min_importance=0.8)] == [goal.id]
    assert {e.session for e in store.list(session="s2")} == {"s2"}
    assert store.get(goal.id).agent == "claude-code"


@pytest.mark.parametrize("bad, reason", [
    (NewEvent(EventType.NOTE, "   "), "needs some text"),
    (NewEvent(EventType.NOTE, "x" * 20_001), "more than the"),
    (NewEvent(EventType.NOTE, "ok", importance=1.5), "between 0 and 1"),
    (NewEvent(EventType.NOTE, "ok", parent="ev-missing"), "no event with id"),
    (NewEvent(EventType.NOTE, "token ghp_" + "a" * 36), "not logged"),
])
def test_bad_events_are_refused_whole(store: EventStore, bad: NewEvent, reason: str) -> None:
    with pytest.raises(EventError, match=reason):
        store.log_many([NewEvent(EventType.NOTE, "a good one"), bad])
    assert store.count() == 0  # all or nothing


def test_search_blends_meaning_words_importance(store: EventStore) -> None:
    embedder = HashEmbedder()
    now = time.time()
    store.log(NewEvent(EventType.NOTE, "lunch was pasta", importance=0.9, ts=now))
    hit = store.log(NewEvent(EventType.DECISION, "use bcrypt for the login password hashes",
                             importance=0.5, ts=now - 86_400))
    store.log(NewEvent(EventType.ACTION, "opened the login page", importance=0.1, ts=now))
    _embed_all(store, embedder)
    matrix = EventMatrix(store, embedder.model_id, embedder.dimension)
    hits = search_events(store, "login password hashes", embedder=embedder, matrix=matrix,
                         now=now)
    assert hits[0].event.id == hit.id
    assert hits[0].cosine is not None and hits[0].keyword == 1.0
    only = search_events(store, "login", filters=Filters(types=(EventType.ACTION,)),
                         embedder=embedder, matrix=matrix, now=now)
    assert [h.event.type for h in only] == [EventType.ACTION]
    # No query: importance and recency rank the filtered events.
    ranked = search_events(store, None, weights=EventWeights(0.6, 1.0, 0.0, 7.0), now=now)
    assert [h.event.importance for h in ranked] == [0.9, 0.5, 0.1]


def test_matrix_follows_new_vectors_and_removals(store: EventStore) -> None:
    embedder = HashEmbedder()
    first = store.log(NewEvent(EventType.NOTE, "alpha beta"))
    _embed_all(store, embedder)
    matrix = EventMatrix(store, embedder.model_id, embedder.dimension)
    assert matrix.size() == 1
    store.log(NewEvent(EventType.NOTE, "gamma delta"))
    _embed_all(store, embedder)
    assert matrix.size() == 2
    remove_events(store, [first.id])
    assert matrix.size() == 1
    assert [i for i, _ in matrix.search(embedder.embed_query("alpha beta"), 5, Filters())] \
        != [first.id]


def test_removal_takes_summaries_and_leaves_no_trace(store: EventStore, tmp_path: Path) -> None:
    secret_word = "zanzibarquokka"
    a = store.log(NewEvent(EventType.ACTION, f"tried {secret_word} approach", session="s"))
    b = store.log(NewEvent(EventType.OBSERVATION, "it failed", session="s"))
    summary = store.log(NewEvent(EventType.SUMMARY, f"the {secret_word} approach failed",
                                 covers=(a.id, b.id)))
    assert store.get(summary.id).summary_of == tuple(sorted((a.id, b.id)))
    removed = remove_events(store, [a.id])
    assert set(removed) == {a.id, summary.id}
    assert store.keyword_search(secret_word, 5) == []
    assert [e.id for e in store.list()] == [b.id]
    for path in tmp_path.iterdir():
        assert secret_word.encode() not in path.read_bytes(), path
    assert forget_all_events(store) == 1
    assert store.count() == 0
    for path in tmp_path.iterdir():
        assert b"it failed" not in path.read_bytes(), path


def test_unknown_id_removes_nothing(store: EventStore) -> None:
    kept = store.log(NewEvent(EventType.NOTE, "keep me"))
    with pytest.raises(EventError, match="no event"):
        store.delete([kept.id, "evnothere"])
    assert store.count() == 1


def test_another_process_sees_writes(store: EventStore, tmp_path: Path) -> None:
    other = EventStore.open(tmp_path / "events.sqlite3")
    before = other.change_count()
    store.log(NewEvent(EventType.NOTE, "from the agent"))
    assert other.change_count() != before
    assert [e.text for e in other.list()] == ["from the agent"]
    other.close()
    with sqlite3.connect(tmp_path / "events.sqlite3") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1


def test_try_log_never_waits_on_a_busy_log(store: EventStore, tmp_path: Path) -> None:
    other = sqlite3.connect(tmp_path / "events.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's write in progress
    started = time.monotonic()
    assert store.try_log(NewEvent(EventType.NOTE, "from the loop"), wait_ms=20) is None
    assert time.monotonic() - started < 2  # not the 10 s a normal write waits
    other.execute("ROLLBACK")
    other.close()
    assert store.count() == 0  # nothing half written
    with store.lock:  # another thread of this process is using the store
        seen: list[object] = []
        worker = threading.Thread(target=lambda: seen.append(
            store.try_log(NewEvent(EventType.NOTE, "from the loop"), wait_ms=20)))
        worker.start()
        worker.join()
    assert seen == [None] and store.count() == 0
    logged = store.try_log(NewEvent(EventType.NOTE, "from the loop"), wait_ms=20)
    assert logged is not None and [e.id for e in store.list()] == [logged.id]
    assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000


def test_matrix_grown_in_steps_answers_as_one_loaded_at_once(store: EventStore) -> None:
    embedder = HashEmbedder()
    matrix = EventMatrix(store, embedder.model_id, embedder.dimension)
    for step in range(3):  # past the first buffer's 1,024 rows
        store.log_many([NewEvent(EventType.NOTE, f"step {step} item {n} word{n % 37}")
                        for n in range(700)])
        _embed_all(store, embedder)
        assert matrix.size() == 700 * (step + 1)
    fresh = EventMatrix(store, embedder.model_id, embedder.dimension)
    query = embedder.embed_query("word5 item 12")
    assert matrix.search(query, 20, Filters()) == fresh.search(query, 20, Filters())
