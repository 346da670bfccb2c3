"""Stored text is shown as plain text in every widget that shows it (issue 22, finding 6).

Markup (`[@click=app.quit]`, a stray `[/]`, an unclosed `[bold`), ANSI and OSC sequences go
through the chat messages, the sources pane, the source preview, the memory pane and its
history, the sessions screen (titles and search previews), the index manager, notifications
and the status line: the app keeps running, the literal text is on screen, and no escape
character reaches the terminal.
"""

from __future__ import annotations

import html
import re
from dataclasses import replace
from pathlib import Path

from textual.widgets import DataTable

import tests.tui.fake_backend as fake
from tests.tui.helpers import answer_finished, ask, open_sessions, wait_until
from tui.app import BrainApp
from tui.screens.index_manager import IndexManager
from tui.screens.memory_history import MemoryHistory
from tui.screens.source_preview import SourcePreview
from tui.views import FolderView, MemoryEvent, SourceView
from tui.widgets.memory_pane import MemoryPane

SIZE = (160, 48)
MARKUP = "[@click=app.quit]quit[/] [/] [bold"
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b]52;c;aGk=\x07"
HOSTILE = f"{MARKUP} {ESCAPES}"
SHOWN = "␛[2J␛]0;pwned␇"  # what the escapes look like on screen


def screen_text(app: BrainApp) -> str:
    """Every character drawn on the current screen (from the SVG screenshot)."""
    svg = app.export_screenshot()
    assert "\x1b" not in svg and "\x07" not in svg, "a control character reached the screen"
    runs = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return "".join(html.unescape(run) for run in runs).replace("\xa0", " ")


def assert_shown(app: BrainApp, *literals: str) -> None:
    text = screen_text(app)
    for literal in literals:
        assert literal in text, f"{literal!r} not on screen"


_SAMPLE_SOURCES = fake.sample_sources


def hostile_sources() -> tuple[SourceView, ...]:
    first, *rest = _SAMPLE_SOURCES()
    return (replace(first, relpath=f"notes/{MARKUP}.md", heading=HOSTILE,
                    text=f"stash {HOSTILE}"), *rest)


async def test_hostile_text_is_shown_literally_everywhere(
    make_app, backend, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(fake, "sample_sources", hostile_sources)
    backend.chat.script.tokens = [f"Answer {MARKUP} ", ESCAPES, " [1]."]
    backend.memory.items["m1"] = replace(backend.memory.items["m1"], text=f"likes {HOSTILE}")
    backend.memory.events["m1"] = [MemoryEvent("edit-by-user", HOSTILE, f"likes {HOSTILE}",
                                               "user", fake.STAMP)]
    backend.sessions.sessions["s1"] = replace(backend.sessions.sessions["s1"], title=HOSTILE)
    fake.PAST_TURNS["s1"] = (f"stash question {HOSTILE}", f"stash answer {HOSTILE}")
    monkeypatch.setattr(fake, "PAST_TURNS", dict(fake.PAST_TURNS))
    folder = str(tmp_path / MARKUP)
    backend.knowledge.folders_[folder] = FolderView(folder, 1, 2, fake.STAMP)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        # Chat: the question, the streamed answer, the sources pane.
        await ask(pilot, f"question {HOSTILE}")
        await wait_until(pilot, lambda: answer_finished(app), what="answer finished")
        assert_shown(app, f"question {MARKUP}", f"Answer {MARKUP} {SHOWN}", "notes/[@click=app")
        # The memory pane and a memory's history.
        await pilot.press("ctrl+r")
        pane = app.query_one(MemoryPane)
        await wait_until(pilot, lambda: len(pane.items) == 3)
        assert_shown(app, "reply_style: likes", MARKUP)
        pane.list_view.focus()
        pane.list_view.index = 0
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryHistory))
        await pilot.pause()
        assert_shown(app, MARKUP[:20], "␛[2J")
        await pilot.press("escape")
        # The source preview.
        await app.push_screen(SourcePreview(hostile_sources()[0], "stash"))
        await pilot.pause()
        assert_shown(app, f"stash {MARKUP}", SHOWN)
        await pilot.press("escape")
        # Notifications and the status line.
        app.notify(f"Remembered: {HOSTILE}")
        app.chat_screen.status_bar.model_activity = f"loading {MARKUP}"
        await pilot.pause()
        assert list(app._notifications)[-1].message == f"Remembered: {MARKUP} {SHOWN}␛]52;c;aGk=␇"
        assert_shown(app, f"loading {MARKUP}")
        # The sessions screen: the title (clicking it quit the app before), then a search.
        screen = await open_sessions(pilot)
        await pilot.pause()
        assert_shown(app, MARKUP[:24])
        table = screen.query_one("#session-list", DataTable)
        for x in range(2, 30, 2):  # over the title cell; a click resumes the session
            if app.screen is screen:
                await pilot.click(table, offset=(x, 1))
        await pilot.pause()
        assert app.is_running
        if app.screen is not screen:
            screen = await open_sessions(pilot)
        screen.query_one("#session-search").focus()  # (where F2 opens; the clicks moved it)
        await pilot.press(*"stash")
        await pilot.press("enter")
        await wait_until(pilot, lambda: " about 'stash'" in str(
            screen.query_one("#sessions-status").render()), what="search results")
        assert_shown(app, "stash question [@click")
        await pilot.press("escape")
        # The index manager lists the folder by its name.
        await pilot.press("f3")
        await wait_until(pilot, lambda: isinstance(app.screen, IndexManager))
        await pilot.pause()
        assert_shown(app, MARKUP[:20])
        assert app.is_running
