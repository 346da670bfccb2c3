"""The conversation index: what is indexed, search with dates, crash safety, erasure."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

import pytest

from assistant.conversations.importing import import_conversations
from assistant.conversations.index import KEYWORD_TABLE, ConversationIndex
from assistant.conversations.search import search_conversations
from assistant.conversations.summaries import SessionSummary, save_summary
from assistant.timeflags import range_from_flags
from indexing.progress import Phase, SyncProgress
from tests.fakes import HashEmbedder
from tests.fixtures.conversations import ConversationVectors

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=UTC)


def line(session: str, role: str, text: str, when: str, **extra: Any) -> str:
    return json.dumps({"session": session, "role": role, "text": text,
                       "created_at": when} | extra)


LINES = [
    line("trip", "user", "What did we decide about the kayak trip?", "2026-03-02T09:00:00Z",
         title="Kayak trip planning", ref="k1"),
    line("trip", "assistant", "You decided on Lake Tahoe in June, renting two kayaks.",
         "2026-03-02T09:00:05Z", ref="k2"),
    line("backup", "user", "How do I copy a folder with rsync keeping permissions?",
         "2026-03-10T10:00:00Z", ref="r1"),
    line("backup", "assistant", "Run rsync -a --progress src/ dest/; -a keeps permissions.",
         "2026-03-10T10:00:04Z", ref="r2"),
    line("tea", "user", "Which green tea did I like?", "2026-03-17T08:00:00Z", ref="t1"),
    line("tea", "assistant", "You liked the sencha from Shizuoka.", "2026-03-17T08:00:02Z",
         ref="t2"),
]


@pytest.fixture
def filled(conversation_index: ConversationIndex) -> ConversationIndex:
    report, errors = import_conversations(conversation_index, LINES, name="fixture")
    assert not errors and report.turns == 3
    return conversation_index


def hash_embedder(index: ConversationIndex) -> HashEmbedder:
    """The fixture's embedder (tests/fixtures/conversations.py), which counts what it embeds."""
    embedder = index.embedder()
    assert isinstance(embedder, HashEmbedder)
    return embedder


def fts_terms(index: ConversationIndex) -> set[str]:
    conn = index.store.conn
    return {r[0] for r in conn.execute(f"SELECT term FROM {KEYWORD_TABLE}_vocab")}


def test_turns_are_found_by_words_and_meaning_with_their_refs(filled: ConversationIndex) -> None:
    result = search_conversations(filled, "rsync command for copying folders", now=NOW)
    top = result.hits[0]
    assert (top.question, top.refs, top.seq) == (
        "How do I copy a folder with rsync keeping permissions?", ("r1", "r2"), 1)
    assert top.keyword == 1.0 and top.vector is not None
    assert top.score is not None and 0 < top.score <= 1
    assert result.time_range is None


def test_json_has_exactly_the_documented_shape(filled: ConversationIndex) -> None:
    data = search_conversations(filled, "kayak", now=NOW, top_k=1).to_json()
    assert set(data) == {"query", "time_range", "hits"}
    hit = data["hits"][0]
    assert set(hit) == {"rank", "session", "title", "seq", "created_at", "question", "answer",
                        "score", "scores", "refs"}
    assert set(hit["scores"]) == {"vector", "keyword", "fused"}
    assert hit["title"] == "Kayak trip planning" and hit["refs"] == ["k1", "k2"]
    assert hit["created_at"].startswith("2026-03-02")


def test_a_time_phrase_filters_and_leaves_the_text(filled: ConversationIndex) -> None:
    result = search_conversations(filled, "what did we talk about yesterday", now=NOW)
    assert result.search_text == "what did we talk about"
    assert result.applied and [h.refs for h in result.hits] == [("t1", "t2")]
    data = result.to_json()["time_range"]
    assert data["phrase"] == "yesterday" and data["applied"] is True
    assert data["since"] == "2026-03-17T00:00:00+00:00"


def test_chinese_phrase(filled: ConversationIndex) -> None:
    result = search_conversations(filled, "上周 rsync", now=NOW)
    assert result.search_text == "rsync"
    assert [h.refs for h in result.hits] == [("r1", "r2")]


def test_flags_win_over_phrases_and_are_never_dropped(filled: ConversationIndex) -> None:
    rng = range_from_flags("2026-03-01", "2026-03-05", NOW)
    result = search_conversations(filled, "rsync yesterday", time_range=rng, now=NOW)
    assert result.time_range == rng and result.applied
    assert all(h.refs == ("k1", "k2") for h in result.hits)  # rsync's day is outside
    empty = search_conversations(filled, "rsync", time_range=range_from_flags(
        "2020-01-01", "2020-02-01", NOW), now=NOW)
    assert empty.hits == [] and empty.applied


def test_a_phrase_range_with_no_conversation_is_not_applied(filled: ConversationIndex) -> None:
    result = search_conversations(filled, "what kayak did we rent two years ago", now=NOW)
    assert not result.applied and result.hits[0].refs == ("k1", "k2")
    assert result.to_json()["time_range"]["applied"] is False


def test_only_a_time_phrase_lists_that_period_latest_first(filled: ConversationIndex) -> None:
    result = search_conversations(filled, "this month", now=NOW)
    assert [h.refs[0] for h in result.hits] == ["t1", "r1", "k1"]


def test_reasoning_is_not_indexed(conversation_index: ConversationIndex) -> None:
    store = conversation_index.store
    session = store.create(model="m")
    store.add_turn(session.id, "Plan the garden", "<think>zucchini secretly</think>Tomatoes.",
                   status="complete")
    store.add_turn(session.id, "And herbs?", "Mint first. Wait, basil</think>Basil and thyme.",
                   status="complete")
    conversation_index.sync()
    terms = fts_terms(conversation_index)
    assert "zucchini" not in terms and "mint" not in terms
    assert {"tomato", "basil", "thyme"} <= terms


def test_turns_stored_by_the_chat_are_indexed_by_the_next_sync(
        conversation_index: ConversationIndex, conversation_vectors: ConversationVectors) -> None:
    store = conversation_index.store
    session = store.create(model="m")
    turn = store.add_turn(session.id, "Where is the spare key?", "Under the blue pot.",
                          status="complete")
    assert conversation_index.sync().indexed == 1
    assert set(conversation_vectors.data) == {f"t:{turn.id}"}
    assert conversation_index.sync().indexed == 0  # incremental: nothing twice
    hits = search_conversations(conversation_index, "spare key", now=NOW).hits
    assert hits[0].answer == "Under the blue pot."


def test_renaming_a_session_reindexes_its_turns(filled: ConversationIndex) -> None:
    store = filled.store
    tea = next(s for s in store.list() if s.title.startswith("Which green tea"))
    store.rename(tea.id, "Oolong shopping")
    assert filled.sync().indexed == 1
    assert search_conversations(filled, "oolong", now=NOW).hits[0].refs == ("t1", "t2")


def test_a_crash_between_vectors_and_sqlite_is_repaired(
        conversation_index: ConversationIndex, conversation_vectors: ConversationVectors,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = conversation_index.store
    session = store.create(model="m")
    store.add_turn(session.id, "Crash here?", "Maybe.", status="complete")

    class Killed(BaseException):
        pass

    def killed() -> Any:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(store, "transaction", killed)
        with pytest.raises(Killed):
            conversation_index.sync()
    assert len(conversation_vectors.data) == 1 and conversation_index.count() == 0
    store.delete(session.id)  # and the turn went away before the next start
    report = conversation_index.sync()
    assert report.removed == 1 and conversation_vectors.data == {}


def test_lost_vectors_are_embedded_again(filled: ConversationIndex,
                                         conversation_vectors: ConversationVectors) -> None:
    conversation_vectors.drop()
    assert filled.sync().repaired == 3
    assert len(conversation_vectors.data) == 3


def test_deleting_a_session_leaves_no_trace(filled: ConversationIndex,
                                            conversation_vectors: ConversationVectors) -> None:
    store = filled.store
    backup = next(s for s in store.list() if s.title.startswith("How do I copy"))
    assert "rsync" in fts_terms(filled)
    store.delete(backup.id)  # the plain store: the index is not told
    assert "rsync" not in fts_terms(filled)  # the trigger removed the words in that transaction
    units = store.conn.execute("SELECT COUNT(*) FROM conversation_units").fetchone()[0]
    assert units == 2
    assert filled.forget() == 1
    assert len(conversation_vectors.data) == 2
    assert search_conversations(filled, "rsync", now=NOW).hits[0].refs != ("r1", "r2")


def test_rebuild_from_the_sessions_database(filled: ConversationIndex,
                                            conversation_vectors: ConversationVectors) -> None:
    embedder = hash_embedder(filled)
    before = embedder.texts_embedded
    kept = dict(conversation_vectors.data)
    events: list[SyncProgress] = []
    report = filled.rebuild(progress=events.append, batch_size=2)
    # The progress event of every derived index: units written so far of all.
    assert [(e.phase, e.chunks_done, e.chunks_total) for e in events] == [
        (Phase.indexing, 2, 3), (Phase.indexing, 3, 3)]
    # Every unit and its words written anew; no vector computed again: their text is the same.
    assert (report.indexed, report.embedded, report.removed) == (3, 0, 0)
    assert embedder.texts_embedded == before
    assert conversation_vectors.data.keys() == kept.keys()
    assert search_conversations(filled, "rsync", now=NOW).hits
    assert "embedded 0" in report.summary()

    # A lost vector and a stray one: the rebuild computes the first, drops the second.
    lost = sorted(kept)[0]
    del conversation_vectors.data[lost]
    conversation_vectors.data["t:999999"] = kept[sorted(kept)[1]]
    report = filled.rebuild()
    assert (report.embedded, report.removed) == (1, 1)
    assert conversation_vectors.data.keys() == kept.keys()
    assert embedder.texts_embedded == before + 1


def test_a_renamed_session_keeps_its_turn_vectors(filled: ConversationIndex) -> None:
    # The title is in the keyword text only: renaming rewrites the words, not the vectors.
    embedder = hash_embedder(filled)
    before = embedder.texts_embedded
    trip = next(s for s in filled.store.list() if s.title == "Kayak trip planning")
    filled.store.rename(trip.id, "Paddling holiday")
    report = filled.sync()
    assert report.indexed >= 1 and report.embedded == 0
    assert embedder.texts_embedded == before


def test_summaries_are_units_of_their_own(filled: ConversationIndex) -> None:
    store = filled.store
    trip = next(s for s in store.list() if s.title == "Kayak trip planning")
    assert save_summary(store, trip.id, SessionSummary("Kayak trip", "Planned a paddling "
                        "holiday: Lake Tahoe, June, two rented kayaks."), through_seq=1)
    assert filled.sync().indexed == 1
    hit = search_conversations(filled, "paddling holiday", now=NOW).hits[0]
    assert hit.seq is None and hit.session_id == trip.id and "Lake Tahoe" in hit.answer
    # an older summary never replaces a newer one
    assert not save_summary(store, trip.id, SessionSummary("x", "older"), through_seq=0)


def test_excluding_the_current_session(filled: ConversationIndex) -> None:
    tea = next(s for s in filled.store.list() if s.title.startswith("Which green tea"))
    hits = search_conversations(filled, "green tea sencha", now=NOW, exclude_session=tea.id).hits
    assert all(h.session_id != tea.id for h in hits)


def test_the_keyword_trigger_survives_reopening(tmp_path: Any) -> None:
    from assistant.sessions.store import SessionStore

    vectors = ConversationVectors()
    store = SessionStore.open(tmp_path / "s.sqlite3")
    index = ConversationIndex(store, embedder=lambda: HashEmbedder(128), vectors=lambda: vectors)
    import_conversations(index, LINES)
    store.close()
    conn = sqlite3.connect(tmp_path / "s.sqlite3")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("DELETE FROM sessions")  # any program deleting the sessions
    conn.commit()
    assert conn.execute(f"SELECT COUNT(*) FROM {KEYWORD_TABLE}").fetchone()[0] == 0
    assert conn.execute(f"SELECT COUNT(*) FROM {KEYWORD_TABLE}_ids").fetchone()[0] == 0
    conn.close()


def test_neighbouring_turns_lend_their_words(conversation_index: ConversationIndex) -> None:
    store = conversation_index.store
    session = store.create(model="m")
    first = store.add_turn(session.id, "I'm looking into adoption agencies.", "Good luck!",
                           status="complete")
    assert conversation_index.sync().indexed == 1
    store.add_turn(session.id, "Which one is LGBTQ-friendly?", "Rainbow Families is.",
                   status="complete")
    # the new turn, and the first one again: its keyword text now holds its new neighbour
    assert conversation_index.sync().indexed == 2
    hits = search_conversations(conversation_index, "rainbow", now=NOW).hits
    assert {h.unit_id for h in hits} == {f"t:{first.id}", f"t:{first.id + 1}"}
    assert hits[0].unit_id == f"t:{first.id + 1}"  # its own words rank first


def test_a_turn_that_got_no_answer_is_no_earlier_conversation(
    conversation_index: ConversationIndex
) -> None:
    """Issue 23 (9): a question asked while Ollama was down (failed, no answer) or quit before
    the first token (interrupted, empty) was indexed and then recalled and listed as an
    earlier conversation. Units an older version made of such turns go at the next sync."""
    from assistant.conversations.documents import turn_doc

    store = conversation_index.store
    session = store.create(title="Trip")
    down = store.add_turn(session.id, "Which zebra kayak did I book?", "", status="failed",
                          error="Ollama is not running")
    store.add_turn(session.id, "Is the zebra kayak insured?", "", status="interrupted")
    answered = store.add_turn(session.id, "What about the paddles?",
                              "Two carbon paddles, booked.", status="complete")
    conversation_index.sync()
    result = search_conversations(conversation_index, "zebra kayak", now=NOW)
    assert not [h for h in result.hits if "zebra" in h.question], result.hits
    assert "zebra" not in fts_terms(conversation_index)  # nor in the neighbour's text
    assert conversation_index.count() == 1
    unit = f"t:{answered.id}"
    assert conversation_index.neighbours([unit]) == {unit: []}
    # A unit of the failed turn written by an older version is dropped, its vector too.
    conversation_index.write([turn_doc(turn_id=down.id, session_id=session.id, title="Trip",
                                       question=down.question, answer="",
                                       created_at=down.created_at)])
    assert conversation_index.count() == 2
    conversation_index.sync()
    assert conversation_index.count() == 1 and "zebra" not in fts_terms(conversation_index)
    assert f"t:{down.id}" not in conversation_index.vectors().ids()
