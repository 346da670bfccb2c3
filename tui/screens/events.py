"""The agent event log: what AI agents logged through `brain mcp`, newest first, searchable,
each removable for good. It follows the log live: an agent writing while the screen is open
shows up within a poll."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static

from tui.plain import plain_text
from tui.protocols import EventsApi
from tui.screens.confirm import ConfirmScreen
from tui.views import EventView
from tui.wording import plural
from tui.workers import attempt

POLL_SECONDS = 1.0
TEXT_COLUMNS = 70
SEARCH_HINT = "Search the agent events: words and meaning (\"login bug\"); empty: newest first"


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_COLUMNS else flat[: TEXT_COLUMNS - 1] + "…"


class EventsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss(None)", "Close"),
        Binding("d,delete", "remove", "Erase"),
        Binding("slash,ctrl+f", "find", "Search events"),
    ]

    def __init__(self, events: EventsApi) -> None:
        super().__init__()
        self.api = events
        self.shown: list[EventView] = []
        self.query_text = ""
        self._version: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="events"):
            yield Static("Agent events", classes="dialog-title", markup=False)
            yield Input(placeholder=SEARCH_HINT, id="events-search")
            yield Static("Loading…", id="events-status", markup=False)
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True,
                                              id="events-list")
            table.add_columns("when", "type", "imp.", "agent", "session", "text")
            yield table
            yield Static("", id="events-detail", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.reload()
        self.set_interval(POLL_SECONDS, self._poll)

    def reload(self) -> None:
        self.run_worker(self._reload(), group="events", exclusive=True)

    async def _reload(self) -> None:
        text = self.query_text
        version = await attempt(self.app, "Reading the event log", self.api.version)
        found = await attempt(self.app, "Reading the event log",
                              (lambda: self.api.search(text)) if text else self.api.list)
        if found is not None:
            self._version = version
            self._show(found)

    async def _check(self) -> None:
        version = await attempt(self.app, "Reading the event log", self.api.version)
        if version is not None and version != self._version:
            await self._reload()

    def _poll(self) -> None:
        # Whichever process wrote (an MCP server, `brain events rm`), the version moves.
        self.run_worker(self._check(), group="events-poll", exclusive=True)

    def _show(self, events: list[EventView]) -> None:
        if not self.query("#events-list"):
            return  # closed while the log was read
        table = self.query_one("#events-list", DataTable)
        keep = table.cursor_row
        self.shown = events
        table.clear()
        for e in events:
            # Agents wrote these: Text cells, since DataTable reads a str cell as markup.
            table.add_row(e.when, e.type, f"{e.importance:.2f}", plain_text(e.agent),
                          plain_text(e.session), plain_text(_line(e.text)), key=e.id)
        if events:
            table.move_cursor(row=min(keep, len(events) - 1))
        what = f" for {self.query_text!r}" if self.query_text else ""
        self.query_one("#events-status", Static).update(
            f"{plural(len(events), 'event')}{what}" if events else
            "No agent events yet: agents log them through `brain mcp` (log_event)."
            if not self.query_text else f"No event matches {self.query_text!r}.")
        self._detail()

    def _selected(self) -> EventView | None:
        table = self.query_one("#events-list", DataTable)
        if not self.shown or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    def _detail(self) -> None:
        event = self._selected()
        self.query_one("#events-detail", Static).update(
            plain_text(f"{event.id} · {event.text}") if event is not None else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._detail()

    def action_find(self) -> None:
        self.query_one("#events-search", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_text = event.value.strip()
        self.reload()
        self.query_one("#events-list", DataTable).focus()

    def action_remove(self) -> None:
        chosen = self._selected()
        if chosen is None:
            return

        async def erase() -> None:
            removed = await attempt(self.app, "Erasing the event",
                                    lambda: self.api.remove(chosen.id))
            if removed is not None:
                extra = f" and {removed - 1} summaries of it" if removed > 1 else ""
                self.notify(f"Erased the event{extra}; nothing remains on disk.")
                await self._reload()

        def done(yes: bool | None) -> None:
            if yes:
                self.run_worker(erase(), group="events")

        self.app.push_screen(ConfirmScreen(
            f"Erase this {chosen.type} event for good (with any summary written from it)?",
            yes="Erase", danger=True), done)
