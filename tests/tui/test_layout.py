"""Issue 15's TUI snags: the layout at 80×24 and other small sizes (1), focus traps (2), help and
palette text (7), a status line that is never stale nor cut mid-word (8)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.text import Text
from textual.command import CommandList, CommandPalette
from textual.widgets import DataTable, Input

from tests.tui.helpers import answer_finished, ask, wait_until
from tui.actions import key_label
from tui.fit import fit_parts, fit_words
from tui.layout import CHAT_MIN_COLUMNS, pane_layout
from tui.screens.help import HelpScreen
from tui.screens.text_prompt import TextPrompt
from tui.state import UiState
from tui.views import FolderView
from tui.widgets.chat_input import PLACEHOLDERS
from tui.widgets.memory_pane import MemoryPane
from tui.widgets.sources_pane import SourcesPane
from tui.widgets.status_bar import StatusBar


def ready(app: Any) -> bool:
    status = app.chat_screen.status
    return bool(status.model_ready and status.ollama_ok is not None)


def shown_text(widget: Any) -> str:
    """What a one-line widget shows, as plain text."""
    rendered = widget.render()
    return rendered.plain if isinstance(rendered, Text) else str(rendered)


def whole_words_of(line: str, full: str) -> bool:
    """Every word of `line` (an "…" aside) is a whole word of `full`: nothing cut mid-word."""
    words = set(full.split())
    return all(w.rstrip("…") in words or w == "…" for w in line.split())


# --- the rules, without an app --------------------------------------------------------------


@pytest.mark.parametrize(("width", "mode", "side"), [
    (160, "wide", 56), (120, "wide", 56), (110, "narrow", 56), (100, "narrow", 50),
    (90, "narrow", 40), (89, "collapsed", None), (80, "collapsed", None),
])
def test_pane_layout_keeps_the_chat_readable(width: int, mode: str, side: int | None) -> None:
    layout = pane_layout(width, UiState(), None)
    assert (layout.mode, layout.side_width) == (mode, side)
    if side is not None:
        assert width - side >= CHAT_MIN_COLUMNS
    else:
        assert layout.show_chat and not layout.show_side
        drawer = pane_layout(width, UiState(), "memories")
        assert not drawer.show_chat and drawer.show_memories and not drawer.show_sources


def test_fit_drops_the_least_useful_parts_and_never_cuts_a_word() -> None:
    parts = [("● ollama up", 5), ("model qwen3:4b", 2), ("index 412 files / 1,893 chunks", 3),
             ("memories 3", 0), ("F6/F7 panes", 1)]
    assert fit_parts(parts, 200, ("  │  ", " │ ")).count("  │  ") == 4
    line = fit_parts(parts, 78, ("  │  ", " │ "))
    assert len(line) <= 78 and "F6/F7 panes" in line and "memories" not in line
    assert fit_parts(parts, 30, ("  │  ", " │ ")).startswith("● ollama up")
    assert fit_words("Ask about your notes please", 14) == "Ask about…"


def test_key_names_as_people_read_them() -> None:
    assert key_label("ctrl+q") == "Ctrl+Q"
    assert key_label("plus,equals_sign") == "+, ="
    assert key_label("escape,q,f1") == "Esc, q, F1"
    assert key_label("alt+left") == "Alt+←"
    assert key_label("slash") == "/"


# --- 1: the layout at 80×24 and in between ------------------------------------------------


async def test_80x24_collapses_the_side_panes_to_a_toggle(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.chat_screen
        await wait_until(pilot, lambda: ready(app), what="model and Ollama checked")
        await ask(pilot, "how do I stash?")
        await wait_until(pilot, lambda: answer_finished(app), what="answer")
        await pilot.pause(0.1)
        assert screen.chat_column.outer_size.width == 80 and not screen.side.display
        status = app.query_one(StatusBar)
        assert "F6/F7 panes" in shown_text(status)
        # F6 opens the sources pane in place of the chat, focused; the same key closes it.
        await pilot.press("f6")
        await wait_until(pilot, lambda: screen.sources_pane.table.has_focus, what="sources")
        assert not screen.chat_column.display and screen.side.outer_size.width == 80
        assert screen.sources_pane.table.row_count == 3
        await pilot.press("f6")
        await wait_until(pilot, lambda: screen.chat_input.has_focus, what="back to chat")
        assert screen.chat_column.display and not screen.side.display
        # F7 the memories; Esc goes back to the chat (it stops nothing: no answer running).
        await pilot.press("f7")
        await wait_until(pilot, lambda: screen.memory_pane.list_view.has_focus)
        assert "Esc: chat" in shown_text(status)
        await pilot.press("escape")
        await wait_until(pilot, lambda: screen.chat_input.has_focus, what="Esc closes")
        # The user's own layout is untouched: a wide terminal shows both panes again.
        state = screen.state.state
        assert state.show_sources and state.show_memories and state.side_width == 56
        await pilot.resize_terminal(140, 40)
        await wait_until(pilot, lambda: screen.side.outer_size.width == 56, what="side back")
        assert screen.sources_pane.display and screen.memory_pane.display


async def test_between_90_and_120_columns_the_chat_keeps_50(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.chat_screen
        await wait_until(pilot, lambda: ready(app))
        await pilot.pause(0.1)
        assert screen.side.outer_size.width == 50
        assert screen.chat_column.outer_size.width >= CHAT_MIN_COLUMNS
        await pilot.press("alt+left")  # wider side: no room left, said so, nothing moves
        await wait_until(pilot, lambda: any("at least 50 columns" in m for m in app.notified))
        assert screen.chat_column.outer_size.width >= CHAT_MIN_COLUMNS
        await pilot.press("alt+right")  # narrower works, from the width on screen
        await wait_until(pilot, lambda: screen.side.outer_size.width == 46)
        assert screen.state.state.side_width == 46


@pytest.mark.parametrize("width", [60, 80, 100, 140])
async def test_placeholder_and_status_line_never_cut_mid_word(make_app, width: int) -> None:
    app = make_app()
    async with app.run_test(size=(width, 24)) as pilot:
        screen = app.chat_screen
        await wait_until(pilot, lambda: ready(app))
        screen.status_bar.activity = "⚠ the index was built with another model: re-sync it"
        await pilot.pause(0.1)
        chat_input = screen.chat_input
        assert chat_input.placeholder in PLACEHOLDERS
        assert len(chat_input.placeholder) < chat_input.content_size.width
        status = screen.status_bar
        line = shown_text(status)
        full = " ".join(["● ◌ ○ ollama", status.ollama, "model", status.model, status.index,
                         f"memories {status.memories}", status.activity, status.hint, "│"])
        assert len(line) <= status.content_size.width, line
        assert whole_words_of(line, full), line
        assert "ollama" in line and "⚠" in line  # the most useful parts stay


# --- 2: focus traps -------------------------------------------------------------------------


async def test_keys_work_from_the_memory_pane_and_its_filter(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.chat_screen
        await wait_until(pilot, lambda: ready(app))
        await pilot.press("ctrl+o")  # the memory list
        await wait_until(pilot, lambda: screen.memory_pane.list_view.has_focus)
        width, share = screen.side.outer_size.width, screen.state.state.sources_share
        await pilot.press("alt+left")
        await wait_until(pilot, lambda: screen.side.outer_size.width == width + 4)
        await pilot.press("alt+down")
        await wait_until(pilot, lambda: screen.state.state.sources_share == share + 5)
        # In the filter: Alt+arrows, Ctrl+F (was swallowed: Input deletes a word with it).
        await pilot.press("slash")
        pane = app.query_one(MemoryPane)
        await wait_until(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press("alt+right")
        await wait_until(pilot, lambda: screen.side.outer_size.width == width)
        await pilot.press(*"rust")
        await wait_until(pilot, lambda: len(pane.items) == 1, what="filtered")
        screen.chat_input.load_text("stash")
        await pilot.press("ctrl+f")
        sources = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: sources.table.row_count == 3, what="searched")
        assert pane.filter_text == "rust"
        # Esc in the filter clears it (all memories again); Esc on an empty one goes back
        # to the list.
        pane.query_one(Input).focus()
        await pilot.press("escape")
        await wait_until(pilot, lambda: pane.filter_text == "" and len(pane.items) == 3)
        assert isinstance(app.focused, Input)
        await pilot.press("escape")
        await wait_until(pilot, lambda: pane.list_view.has_focus, what="back to the list")


async def test_ctrl_f_with_an_empty_message_box_asks_what_to_search(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: ready(app))
        await pilot.press("ctrl+f")
        await wait_until(pilot, lambda: isinstance(app.screen, TextPrompt), what="prompt")
        await pilot.press(*"stash", "enter")
        sources = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: sources.table.row_count == 3, what="searched")
        assert app.chat_screen.indexing.search_query == "stash"
        assert "Search: stash" in str(sources.query_one(".pane-caption").render())


# --- 7: help and palette text ----------------------------------------------------------------


async def test_help_shows_plain_text_readable_keys_and_config_names(home, backend) -> None:
    from assistant.context import AppContext
    from tests.tui.conftest import BrainTestApp

    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(
        '[ui]\nkeybindings = { next_theme = "plus,equals_sign" }\n', encoding="utf-8")
    app = BrainTestApp(AppContext.load(str(home)), backend, watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("f1")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["anywhere", "+, =", "Next theme", "next_theme"] in rows
        assert ["anywhere", "Ctrl+Q", "Quit", "quit"] in rows
        assert ["anywhere", "palette only", "Add a memory", "new_memory"] in rows
        assert ["answer", "1 … 9", "Show source [n] of the answer", ""] in rows
        assert ["memory pane", "d, Del", "Delete", ""] in rows
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"forget")
        await pilot.pause(0.5)
        texts = [str(o.prompt) for o in app.screen.query_one(CommandList).options]
        assert any("Forget everything" in t and "[ui] keybindings name: forget_all" in t
                   for t in texts), texts


# --- 8: the status line is never stale --------------------------------------------------------


async def test_status_line_follows_changes_made_elsewhere(make_app, backend) -> None:
    app = make_app(ollama_poll_seconds=0.2)
    async with app.run_test(size=(140, 40)) as pilot:
        status = app.chat_screen.status_bar
        await wait_until(pilot, lambda: status.memories == 3, what="count")
        backend.memory.add("Uses fish as the shell", "fact")  # as `brain memory add` would
        await wait_until(pilot, lambda: status.memories == 4, what="count follows")
        backend.knowledge.folders_["/n"] = FolderView("/n", 1, 1)  # as `brain index` would
        await wait_until(pilot, lambda: status.index == "index 1 file / 1 chunk")


async def test_undoing_an_added_memory_says_it_was_removed(make_app, backend) -> None:
    """Snag 8: undoing an add said "restored" while the memory disappeared. (`u` takes back
    the pane's own latest change, issue 13: here the memory the user just added.)"""
    from textual.widgets import TextArea

    from tui.screens.memory_editor import MemoryEditor

    app = make_app()
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_until(pilot, lambda: ready(app))
        await pilot.press("ctrl+r")
        pane = app.query_one(MemoryPane)
        await wait_until(pilot, lambda: len(pane.items) == 3, what="all memories")
        pane.list_view.focus()
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryEditor))
        app.screen.query_one(TextArea).load_text("Uses fish as the shell")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: len(pane.items) == 4, what="the new memory shown")
        await wait_until(pilot, lambda: app.chat_screen.status_bar.memories == 4)
        await pilot.press("f11")  # (the editor closed: focus is back in the message box)
        await wait_until(pilot, lambda: len(pane.items) == 3, what="the added memory gone")
        notes = [n.message for n in app._notifications]
        assert any("Memory removed" in n for n in notes), notes
        assert not any("restored" in n for n in notes), notes
        await wait_until(pilot, lambda: app.chat_screen.status_bar.memories == 3)
