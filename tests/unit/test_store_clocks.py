"""One injectable wall clock (indexing/clock.py) stamps every store's rows: sessions (and the
conversation summaries in the same database), the retrieval log, the knowledge manifest and
events take `clock=`, so a test sets the time instead of sleeping or patching `time.time`."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.conversations.summaries import SessionSummary, save_summary
from assistant.errors import UserError
from assistant.events.model import EventType, NewEvent
from assistant.events.store import EventStore
from assistant.retrieval.hit import RetrievalResult
from assistant.retrieval.log import RetrievalLog
from assistant.sessions.store import SessionStore
from indexing.knowledge import KnowledgeBase

THEN = 1_000_000_000.0  # 2001-09-09: never what the machine's clock says


def then() -> float:
    return THEN


def test_sessions_turns_and_summaries_are_stamped_by_the_stores_clock(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "sessions.db", clock=then)
    session = store.create(model="m")
    turn = store.add_turn(session.id, "question", "answer", status="complete")
    assert save_summary(store, session.id, SessionSummary("t", "text"), through_seq=1)
    with store.transaction() as conn:
        (summary_at,) = conn.execute("SELECT created_at FROM session_summaries").fetchone()
    assert (session.created_at, turn.created_at, store.get(session.id).updated_at,
            summary_at) == (THEN, THEN, THEN, THEN)
    store.close()


def test_the_retrieval_log_stamps_searches_and_ratings_by_its_clock(tmp_path: Path) -> None:
    with RetrievalLog.open(tmp_path / "log.db", clock=then) as log:
        entry_id = log.append(RetrievalResult("q", [], True, {"total": 1.0}, search_query="q"))
        log.rate(entry_id, 1)
        entry = log.get(entry_id)
    assert entry is not None and (entry.time, entry.rated_at) == (THEN, THEN)


def test_the_manifest_stamps_added_folders_by_its_clock(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    kb = KnowledgeBase.open(tmp_path / "knowledge.db", tmp_path / "vectors", clock=then)
    try:
        kb.add_folder(folder)
        assert [f.added_at for f in kb.manifest.folders()] == [THEN]
    finally:
        kb.close()


def test_an_events_time_is_checked_against_the_stores_clock(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "events.db", clock=then)
    try:
        (logged,) = store.log_many([NewEvent(EventType.NOTE, "on time", ts=THEN - 60)])
        assert logged.ts == THEN - 60
        with pytest.raises(UserError, match="no later than tomorrow"):  # today, for the machine
            store.log_many([NewEvent(EventType.NOTE, "from the future", ts=THEN + 3 * 86_400)])
    finally:
        store.close()
