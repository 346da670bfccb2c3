"""Issue 23 (9): F5 settings are editable — Enter on a setting, a value, Enter: written to the
config file by the file's rules (comments kept), applied to the chat at once when the engine
can take it, "applies on restart" otherwise; a bad value is a one-line error, nothing lost."""

from __future__ import annotations

from assistant.context import AppContext
from tests.tui.fake_backend import FakeBackend
from tests.tui.helpers import wait_until
from tui.screens.chat import ChatScreen
from tui.screens.settings import SettingsScreen
from tui.screens.text_prompt import TextPrompt

SIZE = (160, 45)


async def _change(pilot, app, name: str, value: str) -> TextPrompt:
    """Select `name` in F5's table, Enter, type `value` over the old one, Enter."""
    from textual.widgets import DataTable, Input

    table = app.screen.query_one(DataTable)
    table.move_cursor(row=table.get_row_index(name))
    await pilot.press("enter")
    await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt), what="the prompt")
    prompt = app.screen
    prompt.query_one(Input).value = ""
    await pilot.press(*value, "enter")
    return prompt


def _status(app) -> str:
    return str(app.screen.query_one("#settings-status").render())


async def test_f5_edits_a_setting_live_or_for_the_restart(
    make_app, backend: FakeBackend, ctx: AppContext
) -> None:
    path = ctx.paths.config_file
    before = path.read_text(encoding="utf-8")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        await wait_until(pilot, lambda: isinstance(app.screen, SettingsScreen), what="F5")
        prompt = await _change(pilot, app, "ollama.temperature", "5")
        error = prompt.query_one("#prompt-error")
        await wait_until(pilot, lambda: "between 0 and 2" in str(error.render()),
                         what="the range error")
        assert app.screen is prompt and path.read_text(encoding="utf-8") == before
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, SettingsScreen))

        await _change(pilot, app, "ollama.temperature", "0.9")
        await wait_until(pilot, lambda: "applied now" in _status(app), what="applied")
        assert backend.chat.configured == [{"temperature": 0.9}]
        text = path.read_text(encoding="utf-8")
        assert "\ntemperature = 0.9\n" in text and "# Sampling temperature" in text
        assert len(text.splitlines()) == len(before.splitlines())  # one line changed

        await _change(pilot, app, "retrieval.score_threshold", "0.5")
        await wait_until(pilot, lambda: "applies on restart" in _status(app), what="restart")
        assert backend.chat.configured == [{"temperature": 0.9}]
        from textual.widgets import DataTable

        row = app.screen.query_one(DataTable).get_row("retrieval.score_threshold")
        assert str(row[1]) == "0.5 (on restart; running: 0.39)", row
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, ChatScreen))
        running = app.chat_screen.running_config
        assert (running.ollama.temperature, running.retrieval.score_threshold) == (0.9, 0.39)
    from assistant.config_load import load_config

    saved = load_config(path)
    assert (saved.ollama.temperature, saved.retrieval.score_threshold) == (0.9, 0.5)
