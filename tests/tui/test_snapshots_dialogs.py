"""SVG snapshots of the dialogs (help, model picker, settings, log view, sessions, agent events,
the search prompt, the confirmation, a memory's history, the source preview, the folder
picker), the 80×24 layout with its drawer open, and the error
states (Ollama down, a failed turn).

Deterministic as test_snapshots.py: fixed size, fixed data (fake backend), no clock; each
test waits for the exact state it shows (the dialog's content loaded, the status bar's checks
done) instead of a pause. Nothing machine-dependent is on screen: the log view is given a
fixed path, and so are the settings; the folder picker is given a relative folder made in the
test's working directory. Update after an intended visual change with
`pytest --snapshot-update` and look at the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, OptionList

from assistant.errors import UserError
from tests.tui.fake_backend import sample_sources
from tests.tui.helpers import answer_finished, open_sessions, screen_ready, wait_until
from tests.tui.test_snapshots import SIZE, answered, checks_done
from tui.screens.confirm import ConfirmScreen
from tui.screens.events import EventsScreen
from tui.screens.help import HelpScreen
from tui.screens.log_view import LogScreen
from tui.screens.memory_history import MemoryHistory
from tui.screens.model_picker import ModelPicker
from tui.screens.path_picker import FolderTree, PathPicker
from tui.screens.settings import SettingsScreen
from tui.screens.source_preview import SourcePreview
from tui.screens.text_prompt import TextPrompt
from tui.widgets.chat_input import ChatInput
from tui.widgets.memory_pane import MemoryPane

# Shown in the dialogs' captions: paths that exist on no machine (nothing logged, the
# default settings), never the test's temporary home.
LOG_PATH = Path("/home/me/.local/state/brain/brain.log")
CONFIG_PATH = Path("/home/me/.config/brain/config.toml")


async def settled(pilot) -> None:
    """The main screen composed and the status bar's checks done (model, Ollama)."""
    await screen_ready(pilot)
    await wait_until(pilot, lambda: checks_done(pilot.app), what="checks done")


async def on_top(pilot, kind: type) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, kind), what=kind.__name__)
    await pilot.pause()


def test_help(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await settled(pilot)
        await pilot.press("f1")
        await on_top(pilot, HelpScreen)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_settings(snap_compare, make_app, backend) -> None:
    """As F5 opens it, with a fixed config path (F5's is the test's temporary home)."""
    async def run_before(pilot) -> None:
        await settled(pilot)
        screen = pilot.app.chat_screen
        pilot.app.push_screen(SettingsScreen(screen.running_config, CONFIG_PATH,
                                             backend.chat.configure))
        await on_top(pilot, SettingsScreen)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_model_picker(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await settled(pilot)
        await pilot.press("f4")
        await on_top(pilot, ModelPicker)
        options = pilot.app.screen.query_one(OptionList)
        await wait_until(pilot, lambda: options.option_count == 2 and options.has_focus,
                         what="the models listed")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_log_view(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await settled(pilot)
        screen = LogScreen(LOG_PATH)
        pilot.app.push_screen(screen)
        await on_top(pilot, LogScreen)
        await wait_until(pilot, lambda: "Nothing logged yet" in str(
            screen.query_one("#log-caption").render()), what="the log read")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_confirm_forget_everything(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await settled(pilot)
        pane = pilot.app.query_one(MemoryPane)
        await wait_until(pilot, lambda: not pane.updating, what="memories listed")
        pilot.app.chat_screen.action_forget_all()
        await on_top(pilot, ConfirmScreen)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_80x24_with_the_sources_drawer_open(snap_compare, make_app) -> None:
    """Collapsed layout: F6 shows the sources pane in place of the chat, Esc goes back."""
    async def run_before(pilot) -> None:
        await answered(pilot)
        await pilot.press("f6")
        screen = pilot.app.chat_screen
        await wait_until(pilot, lambda: screen.drawer == "sources"
                         and screen.sources_pane.table.has_focus, what="sources drawer")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_ollama_down(snap_compare, make_app, backend) -> None:
    backend.ollama.up = False

    async def run_before(pilot) -> None:
        await screen_ready(pilot)
        status = pilot.app.chat_screen.status
        await wait_until(pilot, lambda: status.ollama_ok is False and status.model_ready
                         and backend.chat.preloaded, what="the banner: Ollama down")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_a_failed_turn(snap_compare, make_app, backend) -> None:
    backend.chat.script.fail_with = UserError("model 'qwen3:4b' not found",
                                              "ollama pull qwen3:4b")

    async def run_before(pilot) -> None:
        app = pilot.app
        await settled(pilot)
        app.query_one(ChatInput).load_text("how do I apply a stash?")
        await pilot.press("enter")
        await wait_until(pilot, lambda: answer_finished(app), what="the failed answer")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_sessions(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await answered(pilot)
        await open_sessions(pilot)
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_events(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await settled(pilot)
        await pilot.press("f10")
        await on_top(pilot, EventsScreen)
        status = pilot.app.screen.query_one("#events-status")
        await wait_until(pilot, lambda: "Loading" not in str(status.render()),
                         what="the events listed")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_search_prompt(snap_compare, make_app) -> None:
    async def run_before(pilot) -> None:
        await settled(pilot)
        await pilot.press("ctrl+f")
        await on_top(pilot, TextPrompt)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_memory_history(snap_compare, make_app, backend) -> None:
    """A memory's history as `h` shows it: edited twice by the user, oldest first."""
    backend.memory.edit("m2", "Works on the Rust compiler's borrow checker")
    backend.memory.edit("m2", "Leads the Rust compiler's borrow checker work")

    async def run_before(pilot) -> None:
        await settled(pilot)
        pane = pilot.app.query_one(MemoryPane)
        await wait_until(pilot, lambda: not pane.updating, what="memories listed")
        memory = backend.memory.items["m2"]
        pilot.app.push_screen(MemoryHistory(memory, backend.memory.history("m2")))
        await on_top(pilot, MemoryHistory)
        assert pilot.app.screen.query_one(DataTable).row_count == 2

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_source_preview(snap_compare, make_app) -> None:
    """A cited source after an answer, the question's words highlighted."""
    async def run_before(pilot) -> None:
        await answered(pilot)
        pilot.app.push_screen(SourcePreview(sample_sources()[0], "how do I apply a stash?"))
        await on_top(pilot, SourcePreview)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_path_picker(snap_compare, make_app, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    """As the index manager's `a` opens it, on a folder with two subfolders and a hidden one
    (not listed), named relative to the working directory so no machine's path shows."""
    for name in ("notes/recipes", "notes/work", "notes/.git"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "notes" / "todo.md").write_text("files are not listed\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    async def run_before(pilot) -> None:
        await settled(pilot)
        pilot.app.push_screen(PathPicker(Path("notes")))
        await on_top(pilot, PathPicker)
        tree = pilot.app.screen.query_one(FolderTree)
        await wait_until(pilot, lambda: [str(n.label) for n in tree.root.children]
                         == ["recipes", "work"], what="the folders listed")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)
