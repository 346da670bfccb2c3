"""Ask for one line of text (rename a session, export path…)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from assistant.plain_text import plain


class TextPrompt(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority, Enter too: the dialog closes as the key arrives, so what is typed next
        # reaches the screen below ("type-ahead", tui/screens/chat.py).
        Binding("escape", "dismiss(None)", "Cancel", priority=True),
        Binding("enter", "submit", "OK", show=False, priority=True),
    ]

    def __init__(
        self, title: str, value: str = "", *, validate: Callable[[str], str | None] | None = None
    ) -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.check = validate

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(plain(self.title_text), classes="dialog-text", markup=False)
            yield Input(self.value, id="prompt-input")
            yield Static("", id="prompt-error", classes="error-text", markup=False)

    def action_submit(self) -> None:
        value = self.query_one("#prompt-input", Input).value.strip()
        problem = "Enter a value (Esc cancels)" if not value else None
        if problem is None and self.check is not None:
            problem = self.check(value)
        if problem:
            self.query_one("#prompt-error", Static).update(plain(problem))
            return
        self.dismiss(value)
