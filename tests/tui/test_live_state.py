"""The TUI beside `brain` commands run in another process (issue 23, finding 3): every snapshot
the app holds — the conversation vectors, the current session, the knowledge index — follows
what the other process changed, and the next search or message works right after it.

`brain` runs for real (`python -m assistant.cli.main`) while a pilot app is open on the same
home; embeddings come from the fake Ollama in both processes, so they share one collection.
"""

from __future__ import annotations

from pathlib import Path

from tests.tui import test_memory_live as live
from tests.tui.conftest import BrainTestApp
from tests.tui.helpers import answer_finished, ask, wait_until
from tui.screens.sessions import SessionsScreen
from tui.widgets.chat_input import ChatInput
from tui.widgets.conversations_table import ConversationsTable
from tui.widgets.sources_pane import SourcesPane

SIZE = (140, 40)
EXPORT = Path(__file__).parents[1] / "data" / "chatgpt_conversations.json"

# The live-memory tests' core backend on the fake Ollama (a fixture), app factory, CLI runner.
core = live.core
make, brain = live.make, live.brain


def errors(app: BrainTestApp) -> list[str]:
    return [n.message for n in app._notifications if n.severity == "error"]


async def search_sessions(pilot, app: BrainTestApp, text: str) -> SessionsScreen:
    await pilot.press("f2")
    await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen))
    screen = app.screen
    assert isinstance(screen, SessionsScreen)
    await pilot.press(*text, "enter")
    await wait_until(pilot, lambda: screen.searching or errors(app), timeout=120,
                     what="the search's hits")
    return screen


async def test_f2_search_after_an_import_from_another_process(core, home: Path) -> None:
    """The app searched (and so opened the conversation vectors) before `brain sessions
    import` added turns: the next search finds them, without "Could not read vectors"."""
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "how do I copy my photos with rsync?")
        await wait_until(pilot, lambda: answer_finished(app), timeout=120)
        screen = await search_sessions(pilot, app, "rsync photos")
        await pilot.press("escape")
        await brain(home, "sessions", "import", str(EXPORT))
        # In the imported chat's own words: the fake's bag-of-words vectors are no model of
        # meaning, and the relevance floor (issue 23 finding 4) holds for them too.
        screen = await search_sessions(pilot, app, "back up my home folder with rsync")
        assert errors(app) == []
        hits = screen.query_one("#session-hits", ConversationsTable)
        titles = [h.title for h in hits.conversations]
        assert "Rsync backup flags" in titles, titles


async def test_forget_all_elsewhere_starts_a_new_session(core, home: Path) -> None:
    """`brain sessions forget-all` while the app is in a session: the next message starts a
    new session, with a notice (it failed with "no session matches …" until Ctrl+N)."""
    backend = core[1]
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "first question")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id is not None
                         and not app.chat_screen.chat.generating, timeout=120)
        old = app.chat_screen.chat.session_id
        await brain(home, "sessions", "forget-all", "--yes")
        await ask(pilot, "second question")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id not in (None, old)
                         and not app.chat_screen.chat.generating, timeout=120,
                         what="a new session")
        assert errors(app) == []
        notes = [n.message for n in app._notifications]
        assert any("new session" in n.lower() for n in notes), notes
        assert [s.turns for s in backend.sessions.list()] == [1]


async def test_search_after_a_folder_is_removed_elsewhere(core, home: Path, tmp_path: Path) -> None:
    """`brain folders rm` while the app is open: Ctrl+F no longer lists the folder's files."""
    notes, trips = tmp_path / "notes", tmp_path / "trips"
    for folder, text in ((notes, "The kayak trip is on Saturday at the lake."),
                         (trips, "Kayak packing list: paddle, spray deck, dry bag.")):
        folder.mkdir()
        (folder / "kayak.md").write_text(f"# Kayak\n\n{text}\n")
    await brain(home, "index", str(notes), str(trips))
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(SourcesPane)
        box = app.query_one(ChatInput)

        def found() -> set[str]:
            return {s.source for s in pane.sources}

        box.load_text("kayak")
        await pilot.press("ctrl+f")
        await wait_until(pilot, lambda: len(found()) == 2, timeout=120, what="both files")
        await brain(home, "folders", "rm", str(notes))
        box.load_text("kayak trip")
        await pilot.press("ctrl+f")
        await wait_until(pilot, lambda: pane.sources and "kayak trip" in str(
            pane.query_one(".pane-caption").render()), timeout=120, what="the new search")
        assert found() == {str(trips / "kayak.md")} and errors(app) == []
