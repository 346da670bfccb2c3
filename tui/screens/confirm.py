"""A yes/no question; dismisses with True only on an explicit yes."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from assistant.plain_text import plain


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority: handled as the key arrives, so the keys typed after it reach the screen
        # below (tui/screens/chat.py, "type-ahead"), not this one's buttons.
        Binding("escape,n", "dismiss(False)", "No", priority=True),
        Binding("y", "dismiss(True)", "Yes", priority=True),
    ]

    def __init__(self, question: str, *, yes: str = "Yes", danger: bool = False) -> None:
        super().__init__()
        self.question = question
        self.yes_label = yes
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(plain(self.question), classes="dialog-text", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(
                    self.yes_label, id="yes", variant="error" if self.danger else "primary"
                )
                yield Button("Cancel", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()  # the safe choice is the default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
