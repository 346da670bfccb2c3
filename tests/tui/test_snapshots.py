"""SVG snapshots: the main screen in every bundled theme and at 80×24, the memory editor, the
index manager.

Deterministic: fixed terminal size, blinking cursors off, fixed data (fake backend) and no
clock on screen. Update after an intended visual change with `pytest --snapshot-update`.
"""

from __future__ import annotations

import pytest
from textual.widgets import TextArea

from tests.tui.fake_backend import STAMP
from tests.tui.helpers import answer_finished, screen_ready, wait_until
from tui.screens.memory_editor import MemoryEditor
from tui.themes import load_themes
from tui.views import FolderView
from tui.widgets.chat_input import ChatInput
from tui.widgets.memory_pane import MemoryPane

SIZE = (120, 36)
THEMES = load_themes().names()


def checks_done(app) -> bool:
    status = app.chat_screen.status
    return bool(status.model_ready and status.ollama_ok)


async def answered(pilot) -> None:
    app = pilot.app
    await screen_ready(pilot)
    chat_input = app.query_one(ChatInput)
    chat_input.load_text("how do I apply a stash?")
    await pilot.press("enter")
    await wait_until(pilot, lambda: answer_finished(app), what="answer")
    await wait_until(pilot, lambda: checks_done(app), what="checks done")
    await pilot.pause(0.1)


@pytest.mark.parametrize("theme", THEMES)
def test_main_screen(theme, snap_compare, make_app) -> None:
    app = make_app()

    async def run_before(pilot) -> None:
        pilot.app.theme = theme
        await answered(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_memory_editor(snap_compare, make_app) -> None:
    app = make_app()

    async def run_before(pilot) -> None:
        await screen_ready(pilot)
        await pilot.press("ctrl+r")
        pane = pilot.app.query_one(MemoryPane)
        # The listing applied whole: its last step puts the cursor on the first row, which
        # under load landed after the test had moved it.
        await wait_until(pilot, lambda: len(pane.items) == 3 and not pane.updating,
                         what="all memories")
        pane.list_view.focus()
        pane.list_view.index = 1
        await wait_until(pilot, lambda: (chosen := pane.selected()) is not None
                         and chosen.id == "m2", what="m2 selected")
        await pilot.press("e")
        # The editor open with its text focused (a fixed pause raced it under load).
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, MemoryEditor)
                         and pilot.app.screen.query_one(TextArea).has_focus,
                         what="memory editor focused")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_index_manager(snap_compare, make_app, backend) -> None:
    backend.knowledge.folders_ = {
        "/home/me/notes": FolderView("/home/me/notes", 412, 1893, STAMP.replace("T", " ")[:16]),
        "/home/me/src/brain": FolderView("/home/me/src/brain", 96, 702, ""),
    }
    app = make_app()

    async def run_before(pilot) -> None:
        # The status bar behind the modal must be settled, or the snapshot races the checks.
        await wait_until(pilot, lambda: checks_done(pilot.app), what="checks done")
        await pilot.press("f3")
        await wait_until(pilot, lambda: getattr(pilot.app.screen, "folders", None),
                         what="folders listed")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_main_screen_at_80x24(snap_compare, make_app) -> None:
    """Issue 15 snag 1: at 80×24 the side panes collapse behind F6/F7; the chat gets the width."""
    app = make_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=answered)
