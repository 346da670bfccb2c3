"""The keyboard model (issue 23, README "Keys"): typing lands in the message box unless the user
moved focus to a pane; a key typed while a dialog closes goes where focus will be; after any
dialog, a search, a preview or opening a conversation, focus is back in the message box; F2
opens on its search box; memory changes are undone from anywhere, as many steps as made.

Every test types at full speed: the keys of one transition go in one `pilot.press(...)` call,
with no pause between the key that closes a dialog and the keys typed after it.
"""

from __future__ import annotations

from tests.tui.fake_backend import FakeBackend
from tests.tui.helpers import open_sessions, wait_until
from tui.screens.chat import ChatScreen
from tui.screens.memory_editor import MemoryEditor
from tui.screens.sessions import SessionsScreen
from tui.screens.source_preview import SourcePreview
from tui.widgets.chat_input import ChatInput
from tui.widgets.memory_pane import MemoryPane
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane

SIZE = (140, 40)


def memories(backend: FakeBackend) -> dict[str, tuple[str, bool]]:
    """id → (status, pinned) as stored."""
    return {m.id: (m.status, m.pinned) for m in backend.memory.items.values()}


async def all_memories_focused(pilot, app) -> MemoryPane:
    """The memory pane focused (Ctrl+O) and listing every memory (a)."""
    pane = app.query_one(MemoryPane)
    await pilot.press("ctrl+o", "a")
    await wait_until(pilot, lambda: len(pane.items) == 3, what="all memories listed")
    assert pane.list_view.has_focus
    return pane


async def test_type_ahead_after_closing_f2_reaches_the_message_box(make_app, backend) -> None:
    """Finding 1: Esc from F2 then a question typed at once: h, d, p, n are the memory pane's
    commands (history, delete, pin, new) and must not reach it."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await all_memories_focused(pilot, app)
        before = memories(backend)
        await pilot.press("f2", "escape", *"hdpn", "space", *"ok")
        box = app.query_one(ChatInput)
        await wait_until(pilot, lambda: box.text == "hdpn ok", what="the keys in the box")
        assert isinstance(app.screen, ChatScreen) and app.focused is box
        await pilot.pause()
        assert memories(backend) == before


async def test_f2_opens_on_its_search_box(make_app, backend) -> None:
    """Letters typed right after F2 are a search, never the list's d (delete) or r (rename)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2", *"drx")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen))
        screen = app.screen
        search = screen.query_one("#session-search")
        await wait_until(pilot, lambda: search.value == "drx", what="the search typed")
        assert app.focused is search and len(app.screen_stack) == 2  # no dialog opened
        assert set(backend.sessions.sessions) == {"s1", "s2"}


async def test_ctrl_f_leaves_enter_to_send_the_question(make_app, backend) -> None:
    """After Ctrl+F the results are in the sources pane, but Enter sends the typed question
    (it opened a preview of the first source)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*"stash", "ctrl+f", "enter")
        await wait_until(pilot, lambda: app.query(AnswerMessage), what="the question sent")
        assert app.query_one(AnswerMessage).question == "stash"
        assert not isinstance(app.screen, SourcePreview)
        assert isinstance(app.focused, ChatInput)
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.table.row_count == 3, what="the search results")


async def test_opening_a_search_hit_returns_focus_to_the_box(make_app, backend) -> None:
    """Finding 1: opening a hit from F2 left focus on an answer, where - rated it 👎, t toggled
    its reasoning, y copied it."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sessions(pilot)
        await pilot.press(*"kayak", "enter")
        await wait_until(pilot, lambda: screen.searching, what="the hits")
        await pilot.press("enter", "minus", *"ty")
        box = app.query_one(ChatInput)
        await wait_until(pilot, lambda: box.text == "-ty", what="the keys in the box")
        assert app.chat_screen.chat.session_id == "s2"
        assert backend.chat.feedback_log == []


async def test_any_dialog_returns_focus_to_the_box(make_app, backend) -> None:
    """From a pane, a dialog opened and closed: the next keys are text, not pane commands
    (a preview from the sources pane, a memory editor from the memory pane)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        box = app.query_one(ChatInput)
        await pilot.press(*"git", "ctrl+f")
        pane = app.query_one(SourcesPane)
        await wait_until(pilot, lambda: pane.table.row_count == 3, what="the search results")
        box.clear()
        await pilot.press("ctrl+s", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, SourcePreview))
        await pilot.press("escape", *"cy")  # c marks a right source, y copies the preview
        await wait_until(pilot, lambda: box.text == "cy", what="the keys in the box")
        before = memories(backend)
        await all_memories_focused(pilot, app)
        box.clear()
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryEditor))
        await pilot.press("escape", *"dp")
        await wait_until(pilot, lambda: box.text == "dp", what="the keys in the box")
        assert memories(backend) == before


async def test_pin_delete_undo_undo_reverts_both(make_app, backend) -> None:
    """Finding 2: the second u failed ("changed since (version 4, expected 2)"). The status
    line says what the next undo reverts; F11 undoes from the message box."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        pane = await all_memories_focused(pilot, app)
        await pilot.press("down")
        victim = pane.selected()
        assert victim is not None and not victim.pinned
        status = app.chat_screen.status_bar
        await pilot.press("p", "d")
        await wait_until(pilot, lambda: backend.memory.items[victim.id].status == "deleted")
        assert backend.memory.items[victim.id].pinned
        await wait_until(pilot, lambda: status.undo.startswith("undo: deleted “Works on"))
        await pilot.press("u", "u")
        await wait_until(pilot, lambda: memories(backend)[victim.id] == ("active", False),
                         what="both changes reverted")
        await wait_until(pilot, lambda: status.undo == "", what="nothing left to undo")
        notes = [n.message for n in app._notifications]
        assert not any("changed since" in n for n in notes), notes
        # From the message box: F11 takes back a delete made in the pane.
        await wait_until(pilot, lambda: len(pane.items) == 3 and pane.selected() is not None)
        again = pane.selected()
        assert again is not None
        await pilot.press("d", "ctrl+l")
        await wait_until(pilot, lambda: backend.memory.items[again.id].status == "deleted")
        assert isinstance(app.focused, ChatInput)
        await pilot.press("f11")
        await wait_until(pilot, lambda: backend.memory.items[again.id].status == "active",
                         what="F11 restored it")
