"""Every change to one memory: who changed what, when."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from assistant.plain_text import plain
from tui.plain import plain_text
from tui.views import MemoryEvent, MemoryView


class MemoryHistory(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", priority=True),  # (type-ahead: chat.py)
    ]

    def __init__(self, memory: MemoryView, events: list[MemoryEvent]) -> None:
        super().__init__()
        self.memory = memory
        self.events = events

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Static(plain(f"History of memory {self.memory.id}: {self.memory.text}"),
                         classes="dialog-title", markup=False)
            table: DataTable[str | Text] = DataTable(cursor_type="row")
            table.add_columns("when", "event", "by", "before", "after")
            for e in self.events:
                table.add_row(e.at, e.event, e.actor, plain_text(e.old_text or ""),
                              plain_text(e.new_text or ""))
            yield table
            if not self.events:
                yield Static("No recorded changes.", markup=False)
