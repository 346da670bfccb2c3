"""F12: the log file in the app, plain text (log lines quote documents and model output)."""

from __future__ import annotations

from textual.widgets import Log

from assistant.context import AppContext
from assistant.logfile import log_file
from tests.tui.helpers import wait_until
from tui.screens.log_view import LogScreen

HOSTILE = "[@click=app.quit]click me[/] [bold]\x1b]0;pwned\x07 error"


async def test_f12_shows_the_log_file_as_plain_text(make_app, ctx: AppContext) -> None:
    path = log_file(ctx.paths)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("2026-12-01 10:00:00,000 1 tui ERROR tui.workers: first\n"
                    f"2026-12-01 10:00:01,000 1 tui ERROR tui.workers: {HOSTILE}\n")
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("f12")
        await wait_until(pilot, lambda: isinstance(app.screen, LogScreen))
        view = app.screen.query_one(Log)
        await wait_until(pilot, lambda: view.line_count >= 2, what="log lines shown")
        # Markup shown as typed, not applied (a click on it must not quit the app).
        assert "tui.workers: [@click=app.quit]click me[/] [bold]" in view.lines[-1]
        assert str(path) in str(app.screen.query_one("#log-caption").render())
        await pilot.click("#log-lines")
        assert app.is_running
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, LogScreen))


async def test_f12_without_a_log_says_nothing_was_logged(make_app, ctx: AppContext) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("f12")
        await wait_until(pilot, lambda: isinstance(app.screen, LogScreen))
        caption = app.screen.query_one("#log-caption")
        await wait_until(pilot, lambda: "Nothing logged yet" in str(caption.render()))
