"""The log file in the app (F12): the newest records of `<data dir>/logs/brain.log`, shared by
every brain process, so a failure's traceback can be read without leaving the app.

Shown as plain text (the `Log` widget renders no markup): log lines quote documents, model
replies and file names."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Log, Static

from assistant.logfile import tail
from assistant.plain_text import plain
from tui.workers import attempt

MAX_LINES = 2000


class LogScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", priority=True),  # (type-ahead: chat.py)
        Binding("r", "reload", "Reload"),
    ]

    def __init__(self, log_path: Path) -> None:
        super().__init__()
        self.log_path = log_path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="log-view"):
            yield Static("Log", classes="dialog-title", markup=False)
            yield Log(max_lines=MAX_LINES, auto_scroll=True, id="log-lines")
            yield Static("", id="log-caption", classes="dialog-hint", markup=False)

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self.run_worker(self._load(), group="log-view", exclusive=True)

    async def _load(self) -> None:
        lines = await attempt(self.app, "Reading the log", lambda: tail(self.log_path))
        if lines is None:
            return
        view = self.query_one("#log-lines", Log)
        view.clear()
        view.write_lines([plain(line) for line in lines[-MAX_LINES:]])  # logs quote stored text
        caption = self.query_one("#log-caption", Static)
        if lines:
            caption.update(f"{self.log_path} · newest at the bottom · r reload · Esc close")
        else:
            caption.update(f"Nothing logged yet ({self.log_path}) · Esc close")
