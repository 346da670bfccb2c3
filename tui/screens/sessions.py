"""Past conversations: resume, rename, delete, export to Markdown; and a search over all of
them (meaning, words, dates: "kayak last week", `since:2w`), whose hits open at their turn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static

from tui.plain import plain_text
from tui.protocols import SessionsApi
from tui.screens.confirm import ConfirmScreen
from tui.screens.text_prompt import TextPrompt
from tui.views import ConversationSearch, ConversationView, SessionView
from tui.widgets.conversations_table import ConversationsTable
from tui.wording import plural
from tui.workers import attempt, succeeded

SEARCH_HINT = "Search all conversations: words, meaning, dates (\"kayak last week\", since:2w)"


class SessionsScreen(ModalScreen[str | ConversationView | None]):
    """Dismisses with the id of the session to resume, a search hit to open at its turn, or
    None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Esc and Enter are priority keys: the screen closes as they arrive, so the keys typed
        # right after them reach the chat's message box (tui/screens/chat.py, "type-ahead"),
        # never this screen's list, where single letters are commands.
        Binding("escape", "dismiss(None)", "Close", priority=True),
        Binding("q", "dismiss(None)", "Close", show=False),
        Binding("enter", "enter", "Open", priority=True),
        Binding("down", "to_list", "List", show=False),
        Binding("r", "rename", "Rename"),
        Binding("d,delete", "delete", "Delete"),
        Binding("x", "export", "Export Markdown"),
        Binding("slash,ctrl+f", "find", "Search conversations"),
    ]

    def __init__(self, sessions: SessionsApi, current: str | None, export_dir: Path) -> None:
        super().__init__()
        self.api = sessions
        self.current = current
        self.export_dir = export_dir
        self.sessions: list[SessionView] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="sessions"):
            yield Static("Sessions", classes="dialog-title", markup=False)
            yield Input(placeholder=SEARCH_HINT, id="session-search")
            yield Static("Loading…", id="sessions-status", markup=False)
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True,
                                              id="session-list")
            table.add_columns("", "title", "turns", "updated")
            yield table
            hits = ConversationsTable(label="", id="session-hits")
            hits.display = False
            yield hits
        yield Footer()

    def on_mount(self) -> None:
        # Opens ready to type a search: a letter typed at once is a query, never a command.
        self.query_one("#session-search", Input).focus()
        self.reload()

    def reload(self) -> None:
        self.run_worker(self._reload(), group="sessions", exclusive=True)

    async def _reload(self) -> None:
        sessions = await attempt(self.app, "Listing sessions", self.api.list)
        if sessions is not None:
            self._show(sessions)

    def _change(self, action: str, call: Callable[[], object]) -> None:
        async def change() -> None:
            if await succeeded(self.app, action, call):
                self.reload()

        self.run_worker(change(), group="sessions")

    def _show(self, sessions: list[SessionView]) -> None:
        self.sessions = sessions
        table = self.query_one("#session-list", DataTable)
        table.clear()
        for s in sessions:
            table.add_row("●" if s.id == self.current else "", plain_text(s.title or "(untitled)"),
                          str(s.turns), s.updated_at, key=s.id)
        self.query_one("#sessions-status", Static).update(
            plural(len(sessions), "session") if sessions else "No saved sessions yet."
        )

    @property
    def searching(self) -> bool:
        """Search results are shown (instead of the list of sessions)."""
        return self.query_one(ConversationsTable).display

    def action_find(self) -> None:
        self.query_one("#session-search", Input).focus()

    def action_to_list(self) -> None:
        """↓ from the search box moves to what it shows (the sessions or the hits)."""
        shown = self.query_one(ConversationsTable) if self.searching else self.query_one(
            "#session-list", DataTable)
        shown.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "to_list":  # ↓ elsewhere moves the cursor of the list it is in
            return isinstance(self.focused, Input)
        return True

    def action_enter(self) -> None:
        """Enter: search from the search box, else open the selected session or hit."""
        focused = self.focused
        if isinstance(focused, Input):
            self._submit(focused.value)
        elif isinstance(focused, ConversationsTable):
            view = focused.chosen()
            if view is not None:
                self._open_hit(view)
        else:
            self.action_resume()

    def _submit(self, value: str) -> None:
        text = value.strip()
        if not text:
            self._show_list()
            return
        self.query_one("#sessions-status", Static).update(f"Searching for {text!r}…")
        self.run_worker(self._search(text), group="sessions-search", exclusive=True)

    async def _search(self, text: str) -> None:
        found = await attempt(self.app, "Searching conversations",
                              lambda: self.api.search(text))
        if found is None:
            self.query_one("#sessions-status", Static).update(
                plural(len(self.sessions), "session"))
            return
        self._show_hits(found)

    def _show_hits(self, found: ConversationSearch) -> None:
        hits = self.query_one(ConversationsTable)
        hits.show(found.hits)
        hits.display = True
        self.query_one("#session-list", DataTable).display = False
        opens = " — Enter opens one" if found.hits else ""
        self.query_one("#sessions-status", Static).update(
            f"{found.caption}{opens}; empty search: back to the sessions")
        if found.hits:
            hits.focus()

    def _show_list(self) -> None:
        self.query_one(ConversationsTable).display = False
        table = self.query_one("#session-list", DataTable)
        table.display = True
        self.query_one("#sessions-status", Static).update(plural(len(self.sessions), "session"))
        table.focus()

    def on_conversations_table_chosen(self, event: ConversationsTable.Chosen) -> None:
        event.stop()  # (a click on a hit; Enter is action_enter)
        self._open_hit(event.conversation)

    def _open_hit(self, conversation: ConversationView) -> None:
        if conversation.deleted:
            self.notify("That conversation was deleted.", severity="warning")
            return
        self.dismiss(conversation)

    def _selected(self) -> SessionView | None:
        if self.searching:
            return None  # rename/delete/export act on the list of sessions
        table = self.query_one("#session-list", DataTable)
        if not self.sessions or table.cursor_row >= len(self.sessions):
            return None
        return self.sessions[table.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # (a click on a row; Enter is action_enter)
        self.action_resume()

    def action_resume(self) -> None:
        session = self._selected()
        if session is not None:
            self.dismiss(session.id)

    def action_rename(self) -> None:
        session = self._selected()
        if session is None:
            return

        def done(title: str | None) -> None:
            if title:
                self._change("Rename", lambda: self.api.rename(session.id, title))

        self.app.push_screen(TextPrompt("New title", session.title), done)

    def action_delete(self) -> None:
        session = self._selected()
        if session is None:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self._change("Delete", lambda: self.api.delete(session.id))

        self.app.push_screen(
            ConfirmScreen(f"Delete the session {session.title!r} and its turns?",
                          yes="Delete", danger=True),
            done,
        )

    def action_export(self) -> None:
        session = self._selected()
        if session is None:
            return
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in session.title)[:40]
        default = self.export_dir / f"{safe or 'session'}-{session.id[:8]}.md"

        def check(value: str) -> str | None:
            parent = Path(value).expanduser().parent
            return None if parent.is_dir() else f"Folder {parent} does not exist"

        async def export(path: Path) -> None:
            written = await attempt(self.app, "Export",
                                    lambda: self.api.export_markdown(session.id, path))
            if written is not None:
                self.notify(f"Exported to {written}")

        def done(path: str | None) -> None:
            if path:
                self.run_worker(export(Path(path).expanduser()), group="sessions")

        self.app.push_screen(TextPrompt("Export to Markdown file", str(default),
                                        validate=check), done)
