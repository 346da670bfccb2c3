"""The conversation index as a trace holder: deleting sessions takes their units, keywords and
vectors along through its registered trace eraser, whichever path deleted the rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.context import AppContext
from assistant.conversations.service import open_conversations
from assistant.erasure.actions import delete_session, forget_all_sessions
from assistant.erasure.removal import Removal
from assistant.erasure.traces import erase_traces, registered
from assistant.services import Services
from assistant.sessions.store import SessionStore
from tests.fakes import HashEmbedder
from tests.fixtures.conversations import ConversationVectors


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppContext:
    ctx = AppContext.load(str(tmp_path / "home"))
    ctx._embedder = HashEmbedder(dimension=64)
    vectors = ConversationVectors()
    monkeypatch.setattr("assistant.conversations.service.conversation_vectors",
                        lambda ctx: vectors)
    ctx.paths.vectors_dir.mkdir(parents=True, exist_ok=True)  # a vector store exists
    return ctx


def _two_sessions(store: SessionStore) -> tuple[str, str]:
    kept = store.create(title="Backups")
    store.add_turn(kept.id, "Which rsync flags?", "rsync -a --delete", status="complete")
    gone = store.create(title="Kayak trip")
    store.add_turn(gone.id, "Saturday or Sunday?", "We decided on Saturday.",
                   status="complete")
    return kept.id, gone.id


def _state(ctx: AppContext, store: SessionStore) -> tuple[set[str], set[str], set[str]]:
    index = open_conversations(ctx, store)
    with store.lock:
        units = {r[0] for r in store.conn.execute("SELECT id FROM conversation_units")}
        words = {r[0] for r in store.conn.execute("SELECT term FROM conversation_fts_vocab")}
    return units, set(index.vectors().ids()), words


def test_the_conversation_index_is_a_registered_trace_eraser() -> None:
    assert "conversation index" in registered()


def test_deleting_a_session_erases_its_units_words_and_vectors(ctx: AppContext) -> None:
    with Services(ctx) as core:
        store = core.sessions()
        _, gone = _two_sessions(store)
        core.conversations().sync()
        units, vectors, words = _state(ctx, store)
        assert len(units) == 2 and vectors == units and "kayak" in words
        delete_session(core, gone)
        units, vectors, words = _state(ctx, store)
        assert vectors == units and len(units) == 1 and "kayak" not in words
        assert "rsync" in words
        # In the caller's stores: the one session store and index, opened once each.
        assert core.opened["sessions"] == core.opened["conversations"] == 1


def test_rows_deleted_by_any_path_leave_no_vector_after_the_removal(ctx: AppContext) -> None:
    store = SessionStore.open(ctx.paths.sessions_db)
    _, gone = _two_sessions(store)
    open_conversations(ctx, store).sync()
    store.delete(gone)  # not through the erasure actions
    units, vectors, _ = _state(ctx, store)
    assert len(units) == 1 and len(vectors) == 2  # its vector is still there …
    with Services(ctx) as core:
        erase_traces(core, Removal(sessions=(gone,)))
    units, vectors, _ = _state(ctx, store)
    assert vectors == units  # … until the removal's trace erasers ran
    store.close()


def test_forget_all_drops_the_index(ctx: AppContext) -> None:
    with Services(ctx) as core:
        store = core.sessions()
        _two_sessions(store)
        core.conversations().sync()
        assert forget_all_sessions(core) == 2
        assert _state(ctx, store) == (set(), set(), set())
