"""Earlier conversations in the TUI: recalled turns under the sources ([c1], Enter opens the
session at that turn), the dates a question named in the status line, and the sessions screen's
search over all conversations with a date filter. The last test runs over the real core."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Input

from tests.fake_ollama import chat_turn
from tests.tui.conftest import BrainTestApp
from tests.tui.fake_backend import FakeBackend
from tests.tui.helpers import answer_finished, ask, open_sessions, wait_until
from tui.screens.sessions import SessionsScreen
from tui.views import ConversationView
from tui.widgets.chat_input import ChatInput
from tui.widgets.conversations_table import ConversationsTable
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane
from tui.widgets.status_bar import StatusBar

SIZE = (140, 40)
KAYAK_Q = "Shall we take the kayak out on Saturday or on Sunday?"
KAYAK_A = "Saturday is calm: we decided to take the kayak on Saturday morning."


def focused(app: BrainTestApp) -> Widget | None:
    """The focused widget, read afresh: `app.focused` asserted once stays narrowed."""
    return app.focused


def recalled_rows(app: BrainTestApp) -> list[list[str]]:
    table = app.query_one(SourcesPane).recalled
    return [[str(getattr(cell, "plain", cell)) for cell in table.get_row_at(row)]
            for row in range(table.row_count)]


async def test_recalled_turns_and_dates_are_shown_and_open_their_session(
    make_app, backend: FakeBackend
) -> None:
    backend.chat.script.tokens = ["You decided ", "on Saturday [c1]."]
    backend.chat.script.conversations = (
        ConversationView(1, "s2", "Weekend plans", "2026-01-14 18:00", KAYAK_Q, KAYAK_A, 1),
        ConversationView(2, "", "conversation deleted", "2026-01-02 10:00", "", ""),
    )
    backend.chat.script.time_range = "2026-01-05 → 2026-01-11 (last week)"
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(SourcesPane)
        assert not pane.has_class("-recalled")  # no section before any recall
        await ask(pilot, "what did we decide last week about the kayak?")
        await wait_until(pilot, lambda: answer_finished(app), what="answer")
        assert pane.has_class("-recalled") and pane.recalled.display
        rows = recalled_rows(app)
        assert rows[0][:2] == ["c1", "2026-01-14"] and rows[0][3] == "✓"
        assert rows[0][2] == f"Weekend plans\nturn 1: {KAYAK_Q}"
        assert rows[1][2] == "conversation deleted" and rows[1][3] == ""
        status = str(app.query_one(StatusBar).render())
        assert "dates 2026-01-05 → 2026-01-11 (last week)" in status

        # A deleted one cannot be opened; Enter on [c1] opens its session at the turn.
        pane.recalled.focus()
        pane.recalled.move_cursor(row=1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("deleted" in m for m in app.notified))
        pane.recalled.move_cursor(row=0)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id == "s2",
                         what="the recalled session opened")
        # Shown, not focused: the keys go back to the message box (issue 23).
        await wait_until(pilot, lambda: any("at turn 1" in m for m in app.notified),
                         what="opened")
        assert isinstance(app.focused, ChatInput)

        # A new session clears both.
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: not pane.has_class("-recalled"))
        assert "dates" not in str(app.query_one(StatusBar).render())


async def test_clicking_c1_in_the_answer_selects_it(make_app, backend: FakeBackend) -> None:
    backend.chat.script.tokens = ["Saturday [c2]."]
    backend.chat.script.conversations = (
        ConversationView(1, "s1", "Git questions", "2026-01-15 09:30", "stash?", "pop", 1),
        ConversationView(2, "s2", "Weekend plans", "2026-01-14 18:00", KAYAK_Q, KAYAK_A, 1),
    )
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "kayak?")
        await wait_until(pilot, lambda: answer_finished(app), what="answer")
        answer = app.query_one(AnswerMessage)
        answer.post_message(AnswerMessage.RecallSelected(answer, 2))
        table = app.query_one(SourcesPane).recalled
        await wait_until(pilot, lambda: app.focused is table and table.cursor_row == 1)


async def test_sessions_screen_searches_every_conversation_by_date(
    make_app, backend: FakeBackend
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sessions(pilot)
        search = screen.query_one("#session-search", Input)
        assert app.focused is search  # F2 opens ready to type a search (issue 23)
        # A date the core cannot read: a clear error, the search text stays.
        await pilot.press(*"kayak since:someday")
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("cannot read" in m for m in app.notified))
        assert search.value == "kayak since:someday" and not screen.searching
        # Typing keys the screen binds (q, r, d, x) goes into the box.
        search.value = ""
        await pilot.press(*"kayak since:7d")
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.searching, what="search results")
        assert backend.sessions.searches[-1] == "kayak since:7d"
        status = str(screen.query_one("#sessions-status").render())
        assert "1 conversation about 'kayak'" in status and "dates: 2026-01-08" in status
        hits = screen.query_one(ConversationsTable)
        assert focused(app) is hits and hits.row_count == 1
        # An empty search goes back to the list; a search again, then Enter opens the hit.
        search.value = ""
        search.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: not screen.searching)
        await wait_until(pilot, lambda: app.focused is not search)  # the list has it
        search.value = "kayak"
        search.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.searching and app.focused is hits)
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id == "s2",
                         what="the hit's session opened")
        assert not isinstance(app.screen, SessionsScreen)


async def test_ctrl_f_searches_conversations_as_well_as_files(
    make_app, backend: FakeBackend
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.chat_screen.chat_input.load_text("kayak since:7d")
        await pilot.press("ctrl+f")
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.table.row_count == 3, what="files found")
        await wait_until(pilot, lambda: pane.has_class("-recalled"), what="conversations")
        assert backend.sessions.searches == ["kayak since:7d"]
        rows = recalled_rows(app)
        assert rows == [["1", "2026-01-14", "Rust lifetimes\nturn 1: Shall we take the kayak on "
                         "Saturday?", ""]]
        assert "1 found" in str(pane.query_one("#recalled-caption").render())
        assert "dates 2026-01-08 → 2026-01-15 (7d)" in str(app.query_one(StatusBar).render())
        pane.recalled.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id == "s2",
                         what="the conversation opened")


async def test_ctrl_f_still_searches_conversations_when_files_cannot_be(
    make_app, backend: FakeBackend, monkeypatch
) -> None:
    """A file search that fails (here: no index yet) is reported, and the conversations are
    searched all the same."""
    from assistant.errors import UserError

    def broken(query: str):
        raise UserError("the index is empty", "press F3 to add a folder")

    monkeypatch.setattr(backend.knowledge, "search", broken)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.chat_screen.chat_input.load_text("kayak since:7d")
        await pilot.press("ctrl+f")
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.has_class("-recalled"), what="conversations")
        assert backend.sessions.searches == ["kayak since:7d"]
        assert len(recalled_rows(app)) == 1
        assert "files could not be searched" in str(pane.query_one(".pane-caption").render())
        assert any("index is empty" in m for m in app.notified)


# --- over the real core -----------------------------------------------------------------------

async def test_what_did_we_decide_cites_the_earlier_turn(core, fake_ollama) -> None:
    ctx, backend = core
    store = backend.sessions.store()
    earlier = store.create(title="Weekend plans")
    # Words the question shares: the test embedder is a bag of words, not a model of meaning.
    store.add_turn(earlier.id, "What about the kayak trip?", KAYAK_A, status="complete")
    fake_ollama.script_chat("You decided to take the kayak on Saturday morning [c1].",
                            match=chat_turn)
    app = BrainTestApp(ctx, backend, ollama_poll_seconds=0.1, memory_poll_seconds=0.1,
                       watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "what did we decide about the kayak trip?")
        await wait_until(pilot, lambda: answer_finished(app), timeout=60, what="answer")
        answer = app.query_one(AnswerMessage)
        assert answer.text.endswith("[c1].")
        # The model was given the earlier turn, dated, as [c1].
        answers = [b for b in fake_ollama.chat_requests if chat_turn(b)]
        material = answers[-1]["messages"][-1]["content"]
        assert "## Earlier conversations" in material and KAYAK_A in material
        # The pane shows it, cited.
        rows = recalled_rows(app)
        assert len(rows) == 1 and rows[0][0] == "c1" and rows[0][3] == "✓"
        assert rows[0][2] == "Weekend plans\nturn 1: What about the kayak trip?"
        new_session = app.chat_screen.chat.session_id
        assert new_session and new_session != earlier.id
        # Enter opens the earlier session, its turn on screen.
        table = app.query_one(SourcesPane).recalled
        table.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat_screen.chat.session_id == earlier.id,
                         timeout=20, what="the earlier session opened")
        await wait_until(pilot, lambda: [a.text for a in app.query(AnswerMessage)]
                         == [KAYAK_A], what="its turn shown")
        # And the sessions screen finds it by words and date.
        found = backend.sessions.search("kayak since:7d")
        assert [h.session_id for h in found.hits][:2].count(earlier.id) == 1
        assert found.time_range.endswith("(since 7d)") or "7d" in found.time_range


async def test_f2_lists_the_hits_and_caption_the_cli_prints(
        core, ollama_home, monkeypatch, capsys) -> None:
    """Issue 23: F2 listed 20 hits (unrelated ones among them) where `brain sessions search`
    listed 5, and said "nothing from those dates" of a search that named none."""
    import json

    from assistant.cli.main import main
    from assistant.context import AppContext

    ctx, backend = core
    store = backend.sessions.store()
    for n in range(4):  # four chats about the kayak, eight about other things
        session = store.create(title=f"Kayak {n}")
        store.add_turn(session.id, f"Which kayak paddle for trip {n}?",
                       f"Take the long kayak paddle on trip {n}.", status="complete")
    for n in range(8):
        session = store.create(title=f"Other {n}")
        store.add_turn(session.id, f"How do I bake bread number {n}?",
                       f"Knead the dough {n} times, then bake it.", status="complete")
    app = BrainTestApp(ctx, backend, ollama_poll_seconds=0.5, memory_poll_seconds=0.5,
                       watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sessions(pilot)
        await pilot.press(*"kayak paddle", "enter")
        await wait_until(pilot, lambda: screen.searching, timeout=60, what="search results")
        status = str(screen.query_one("#sessions-status").render())
        table = screen.query_one(ConversationsTable)
        shown = [table.get_row_at(row) for row in range(table.row_count)]

    embedder = ctx.embedder()
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    capsys.readouterr()
    assert main(["--home", str(ollama_home), "sessions", "search", "--json",
                 "kayak paddle"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["hits"] and all(h["title"].startswith("Kayak") for h in cli["hits"])
    assert len(shown) == len(cli["hits"])
    assert status.startswith(cli["caption"]) and "dates" not in status
