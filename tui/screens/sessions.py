"""Past conversations: resume, rename, delete, export to Markdown."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from tui.protocols import SessionsApi
from tui.screens.confirm import ConfirmScreen
from tui.screens.text_prompt import TextPrompt
from tui.views import SessionView
from tui.workers import attempt, succeeded


class SessionsScreen(ModalScreen[str | None]):
    """Dismisses with the id of the session to resume, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss(None)", "Close"),
        Binding("enter", "resume", "Resume"),
        Binding("r", "rename", "Rename"),
        Binding("d,delete", "delete", "Delete"),
        Binding("x", "export", "Export Markdown"),
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
            yield Static("Loading…", id="sessions-status", markup=False)
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns("", "title", "turns", "updated")
            yield table
        yield Footer()

    def on_mount(self) -> None:
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
        table = self.query_one(DataTable)
        table.clear()
        for s in sessions:
            table.add_row("●" if s.id == self.current else "", s.title or "(untitled)",
                          str(s.turns), s.updated_at, key=s.id)
        self.query_one("#sessions-status", Static).update(
            f"{len(sessions)} sessions" if sessions else "No saved sessions yet."
        )
        table.focus()

    def _selected(self) -> SessionView | None:
        table = self.query_one(DataTable)
        if not self.sessions or table.cursor_row >= len(self.sessions):
            return None
        return self.sessions[table.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
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
