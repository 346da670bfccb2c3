"""What the screen says about a turn is what happened (issue 23, item 9): a "remember that…" ran
no model and keeps the last real answer's sources; a turn that failed is not an "Answer"; the
sessions search counts in words ("1 conversation")."""

from __future__ import annotations

from tests.tui.helpers import answer_finished, ask, open_sessions, wait_until
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane

SIZE = (140, 40)


def caption(app) -> str:
    return str(app.query_one(SourcesPane).query_one(".pane-caption").render())


async def test_remember_that_shows_no_model_and_keeps_the_sources(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "How do I apply a stash?")
        await wait_until(pilot, lambda: answer_finished(app), what="the answer")
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.table.row_count == 3, what="its sources")
        await ask(pilot, "remember that my wife's birthday is March 3")
        await wait_until(pilot, lambda: len(app.query(AnswerMessage)) == 2
                         and app.query(AnswerMessage)[-1].finished, what="the note")
        note = app.query(AnswerMessage)[-1]
        status = str(note.query_one(".answer-status").render())
        assert "qwen3" not in status and "token" not in status, status
        assert "no model asked" in status, status
        assert pane.table.row_count == 3 and caption(app).startswith("Answer 1: How do I")
        assert app.chat_screen.status_bar.undo.startswith("undo: added “my wife's birthday")


async def test_a_failed_turn_is_not_called_an_answer(make_app, backend) -> None:
    backend.ollama.up = False
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "How do I apply a stash?")
        await wait_until(pilot, lambda: answer_finished(app), what="the failed turn")
        await wait_until(pilot, lambda: caption(app).startswith("Question 1, not answered"),
                         what="the caption")


async def test_one_hit_is_one_conversation(make_app, backend) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sessions(pilot)
        await pilot.press(*"kayak", "enter")
        await wait_until(pilot, lambda: screen.searching, what="the hit")
        status = str(screen.query_one("#sessions-status").render())
        assert status.startswith("1 conversation about 'kayak'"), status
