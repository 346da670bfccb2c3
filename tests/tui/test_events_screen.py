"""The agent events screen: F10 and the palette open it, it follows the log live, searches,
and erases an event after asking."""

from __future__ import annotations

from textual.widgets import DataTable, Input

from tests.tui.helpers import wait_until
from tui.screens.confirm import ConfirmScreen
from tui.screens.events import EventsScreen

SIZE = (140, 40)


async def test_events_live_search_and_erase(make_app, backend) -> None:
    backend.events.log("ran pytest on the login module", type="action")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f10")
        await wait_until(pilot, lambda: isinstance(app.screen, EventsScreen)
                         and app.screen.shown, what="events listed")
        screen = app.screen
        assert isinstance(screen, EventsScreen)
        # An agent writes while the screen is open: it appears without a key press.
        backend.events.log("[red]decided[/red] to mock the auth server", type="decision")
        await wait_until(pilot, lambda: len(screen.shown) == 2, what="live event")
        table = screen.query_one("#events-list", DataTable)
        assert "[red]decided[/red]" in str(table.get_row_at(0)[-1])  # text, never markup
        # Search narrows the list; an empty search shows everything again.
        search = screen.query_one("#events-search", Input)
        search.focus()
        search.value = "pytest"
        await pilot.press("enter")
        await wait_until(pilot, lambda: [e.type for e in screen.shown] == ["action"])
        search.focus()
        search.value = ""
        await pilot.press("enter")
        await wait_until(pilot, lambda: len(screen.shown) == 2)
        # Erase asks first; "no" keeps it.
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("n")
        await wait_until(pilot, lambda: app.screen is screen)
        assert len(backend.events.events) == 2
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_until(pilot, lambda: len(screen.shown) == 1)
        assert [e.type for e in backend.events.events] == ["action"]


async def test_palette_lists_agent_events(make_app) -> None:
    from tui.actions import ACTIONS

    assert any(a.name == "events" and a.title == "Agent events" for a in ACTIONS)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.chat_screen.action_events()
        await wait_until(pilot, lambda: isinstance(app.screen, EventsScreen))


def test_core_adapter_reads_and_erases_the_real_log(tmp_path) -> None:
    from assistant.context import AppContext
    from assistant.events.model import EventType, NewEvent
    from assistant.events.store import EventStore
    from assistant.services import Services
    from tui.backend.events import EventsAdapter

    ctx = AppContext.load(str(tmp_path / "home"))
    writer = EventStore.open(ctx.paths.events_db)  # another process: the MCP server
    adapter = EventsAdapter(Services(ctx))
    assert adapter.list() == []
    before = adapter.version()
    logged = writer.log(NewEvent(EventType.ERROR, "bcrypt import failed", agent="cursor"))
    assert adapter.version() != before
    assert [(e.id, e.agent, e.type) for e in adapter.list()] == [(logged.id, "cursor", "error")]
    assert adapter.remove(logged.id) == 1
    assert writer.count() == 0
    adapter.services.close()
    writer.close()


async def test_due_runs_are_summarised_when_idle_and_not_before(make_app, backend) -> None:
    backend.events.due = 1
    app = make_app(extract_idle_seconds=0.3)
    async with app.run_test(size=SIZE) as pilot:
        summaries = app.chat_screen.event_summaries
        await wait_until(pilot, lambda: summaries.written == 1, what="idle summary")
        assert backend.events.events[0].type == "summary"
        # The next idle check finds nothing due; then the tries wait (no model call per check).
        await wait_until(pilot, lambda: backend.events.summary_calls == 2, what="empty pass")
        await pilot.pause(0.8)
        assert backend.events.summary_calls == 2


async def test_no_summaries_without_idle_time(make_app, backend) -> None:
    backend.events.due = 1
    app = make_app(extract_idle_seconds=0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        assert backend.events.summary_calls == 0
