"""Edit (or write) one memory: its text and type. Ctrl+S saves, Esc cancels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Select, Static, TextArea

from assistant.plain_text import plain
from tui.views import MemoryView
from tui.widgets.memory_pane import MEMORY_TYPES

MAX_MEMORY_CHARS = 2000


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    text: str
    type: str


class MemoryEditor(ModalScreen[MemoryDraft | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel", priority=True),  # (type-ahead: chat.py)
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(self, memory: MemoryView | None) -> None:
        super().__init__()
        self.memory = memory

    def compose(self) -> ComposeResult:
        m = self.memory
        with Vertical(classes="dialog", id="memory-editor"):
            title = f"Edit memory {m.id}" if m else "New memory"
            if m and m.key:
                title += f" (key: {m.key})"
            yield Static(plain(title), classes="dialog-title", markup=False)
            yield Select(
                [(t, t) for t in MEMORY_TYPES], value=m.type if m else "fact",
                allow_blank=False, id="memory-editor-type", disabled=m is not None,
            )
            yield TextArea(m.text if m else "", id="memory-editor-text", soft_wrap=True)
            yield Static("", id="memory-editor-error", classes="error-text", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save", id="save", variant="primary")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(None)

    def action_save(self) -> None:
        text = " ".join(self.query_one(TextArea).text.split())
        error = ""
        if not text:
            error = "A memory cannot be empty (use Delete in the pane to remove it)."
        elif len(text) > MAX_MEMORY_CHARS:
            error = f"Too long: {len(text)} characters (at most {MAX_MEMORY_CHARS})."
        if error:
            self.query_one("#memory-editor-error", Static).update(plain(error))
            return
        type_ = self.query_one(Select).value
        self.dismiss(MemoryDraft(text, type_ if isinstance(type_, str) else "fact"))
