"""Issue 15, snag 3 in the TUI: after a 👎 the user names the right source in the sources pane
(key c), and that reaches the retrieval log as an eval case."""

from __future__ import annotations

import json
from pathlib import Path

from assistant.context import AppContext
from assistant.retrieval.hit import RetrievalResult, SearchHit
from assistant.retrieval.log import RetrievalLog
from assistant.services import Services
from tests.fixtures.retrieval import make_chunk
from tests.tui.helpers import answer_finished, ask, wait_until
from tui.backend.chat import ChatAdapter
from tui.widgets.sources_pane import SourcesPane


async def test_thumbs_down_then_c_names_the_right_source(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ask(pilot, "how do I make a branch?")
        await wait_until(pilot, lambda: answer_finished(app), what="answer")
        await pilot.press("ctrl+g")  # 👎
        await wait_until(pilot, lambda: any("press c" in m for m in app.notified),
                         what="the 👎 toast says how to name the right source")
        await pilot.press("ctrl+s")
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.table.has_focus)
        await pilot.press("down", "c")  # the second source: git/branch.md
        await wait_until(pilot, lambda: backend.chat.right_sources, what="marked")
        assert backend.chat.right_sources == [("log-1", "/notes/git/branch.md")]
        await wait_until(pilot, lambda: any("Marked git/branch.md" in m for m in app.notified))


async def test_c_without_a_logged_retrieval_says_so(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("ctrl+s")
        await pilot.press("c")
        await wait_until(pilot, lambda: any("Select the source" in m for m in app.notified))
        assert backend.chat.right_sources == []


def test_the_right_source_becomes_an_eval_case(home: Path, tmp_path: Path) -> None:
    """Over the real retrieval log: `brain log --disliked --export` writes the file named."""
    ctx = AppContext.load(str(home))
    hit = SearchHit(chunk=make_chunk("/notes/git/stash.md", "git stash pop"), rank=1,
                    score=0.5, fused=0.03, rrf=0.03, cosine=0.5, dense_rank=1, bm25=None,
                    keyword=None)
    with RetrievalLog.open(ctx.paths.retrieval_log_db) as log:
        log_id = log.append(RetrievalResult("how do I make a branch?", [hit], False, {}))
    adapter = ChatAdapter(Services(ctx))  # opens nothing until asked: only the log is used here
    adapter.mark_right_source(str(log_id), "/notes/git/branch.md")
    adapter.mark_right_source(str(log_id), "/notes/git/switch.md")
    adapter.mark_right_source(str(log_id), "/notes/git/branch.md")  # named twice: kept once
    adapter.feedback(str(log_id), -1)  # a later 👎 keeps the sources named
    out = tmp_path / "cases.jsonl"
    with RetrievalLog.open(ctx.paths.retrieval_log_db) as log:
        assert log.export_disliked(out) == 1
    case = json.loads(out.read_text())
    assert case == {"query": "how do I make a branch?",
                    "expected": ["/notes/git/branch.md", "/notes/git/switch.md"]}
