"""Issue 15, snag 6: a resumed session shows the scores its sources had, not "—".

The sessions database keeps the text the model saw; the scores come back from the retrieval
log entry the turn points to. Over the real stores (no model, no Ollama needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.context import AppContext
from assistant.retrieval.hit import RetrievalResult, SearchHit
from assistant.retrieval.log import RetrievalLog
from assistant.services import Services
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import KnowledgeItem, Source
from tests.fakes import HashEmbedder
from tests.fixtures.retrieval import make_chunk
from tests.tui.conftest import BrainTestApp
from tests.tui.helpers import wait_until
from tui.backend import CoreBackend
from tui.backend.sessions import SessionsAdapter
from tui.state import StateStore
from tui.widgets.sources_pane import SourcesPane


def stored_session(ctx: AppContext, *, logged: bool = True) -> str:
    """One answered turn over two sources: the first was in the retrieval log entry."""
    stash = make_chunk("/notes/git/stash.md", "Use git stash pop.", heading="Stash")
    tar = make_chunk("/notes/shell/tar.md", "tar -xzf file.tgz")
    log_id = None
    if logged:
        hit = SearchHit(chunk=stash, rank=1, score=0.5, fused=0.03, rrf=0.03, cosine=0.61,
                        dense_rank=1, bm25=7.5, keyword=0.42)
        with RetrievalLog.open(ctx.paths.retrieval_log_db) as log:
            log_id = log.append(RetrievalResult("how do I stash?", [hit], False, {}),
                                origin="tui")
    items = [KnowledgeItem(chunk_id=c.id, text=c.text, source=c.source, relpath=c.relpath,
                           heading=c.heading, score=0.5) for c in (stash, tar)]
    store = SessionStore.open(ctx.paths.sessions_db)
    try:
        session = store.create(model="qwen3:4b")
        store.add_turn(session.id, "how do I stash?", "Use git stash pop [1].",
                       status="complete", sources=[Source(1, items[0], cited=True),
                                                   Source(2, items[1])], log_id=log_id)
        return session.id
    finally:
        store.close()


def test_resumed_turns_get_their_logged_scores(home: Path) -> None:
    ctx = AppContext.load(str(home))
    session_id = stored_session(ctx)
    adapter = SessionsAdapter(Services(ctx))
    try:
        (turn,) = adapter.turns(session_id)
    finally:
        adapter.services.close()
    first, second = turn.sources
    assert (first.vector, first.keyword, first.fused_rank) == (0.61, 0.42, 1)
    assert (second.vector, second.keyword) == (None, None)  # it was not in the log entry


def test_without_a_log_entry_resuming_still_works(home: Path) -> None:
    ctx = AppContext.load(str(home))
    session_id = stored_session(ctx, logged=False)
    adapter = SessionsAdapter(Services(ctx))
    try:
        (turn,) = adapter.turns(session_id)
    finally:
        adapter.services.close()
    assert [s.vector for s in turn.sources] == [None, None]


def test_a_damaged_log_resumes_without_scores_and_says_so_in_the_log(
        home: Path, caplog: pytest.LogCaptureFixture) -> None:
    ctx = AppContext.load(str(home))
    session_id = stored_session(ctx)
    ctx.paths.retrieval_log_db.write_bytes(b"not a database " * 100)
    adapter = SessionsAdapter(Services(ctx))
    try:
        with caplog.at_level("WARNING", logger="tui.backend.sessions"):
            (turn,) = adapter.turns(session_id)
    finally:
        adapter.services.close()
    assert [s.vector for s in turn.sources] == [None, None]
    assert any("scores could not be read" in r.getMessage() for r in caplog.records)


async def test_the_sources_pane_of_a_resumed_session_shows_scores(home: Path) -> None:
    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    session_id = stored_session(ctx)
    StateStore(ctx.paths.ui_state_file, print).update(last_session=session_id)
    backend = CoreBackend(ctx)
    app = BrainTestApp(ctx, backend, watch=False)
    try:
        async with app.run_test(size=(140, 40)) as pilot:
            pane = app.query_one(SourcesPane)
            await wait_until(pilot, lambda: pane.table.row_count == 2, timeout=30,
                             what="the resumed answer's sources")
            first = [str(c) for c in pane.table.get_row_at(0)]
            assert "61%" in first and "0.42" in first, first
    finally:
        backend.close()


def test_the_tuis_searches_scores_and_feedback_share_one_retrieval_log(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 item 6: the process's one log (`Services.retrieval_log`), not a connection per
    resumed session or per 👍."""
    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    session_id = stored_session(ctx)
    with RetrievalLog.open(ctx.paths.retrieval_log_db) as log:
        (entry_id,) = [e.id for e in log.recent()]
    opened: list[Path] = []
    init = RetrievalLog.__init__

    def counted(self: RetrievalLog, db_path: Path, **kwargs: Any) -> None:
        opened.append(db_path)
        init(self, db_path, **kwargs)

    monkeypatch.setattr(RetrievalLog, "__init__", counted)
    backend = CoreBackend(ctx)
    try:
        assert backend.services.retriever().log is backend.services.retrieval_log()
        for _ in range(2):
            (turn,) = backend.sessions.turns(session_id)
            assert turn.sources[0].vector == 0.61
        backend.chat.feedback(str(entry_id), -1)
        backend.chat.mark_right_source(str(entry_id), "/notes/shell/tar.md")
        backend.chat.feedback(str(entry_id), -1)
        entry = backend.services.retrieval_log().get(entry_id)
        assert entry is not None
        assert (entry.rating, entry.correct_sources) == (-1, ["/notes/shell/tar.md"])
        assert opened == [ctx.paths.retrieval_log_db]
    finally:
        backend.close()
