"""Every key, grouped by where it works, built from the live bindings (so overrides show)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tui.widgets.memory_pane import MemoryPane
from tui.widgets.message import AnswerMessage

CHAT_KEYS = (
    ("enter", "Send the message"),
    ("shift+enter, ctrl+j", "New line in the message"),
    ("up / down", "Previous / next message from the input history"),
    ("escape", "Stop the answer being generated"),
    ("tab / shift+tab", "Move between messages and panes"),
)


def _key_label(key: str) -> str:
    return ", ".join(k.strip() for k in key.split(","))


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="help"):
            yield Static("Keys", classes="dialog-title", markup=False)
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns("where", "key", "action")
            keymap = getattr(self.app, "_keymap", {}) or {}
            for binding in self.app.BINDINGS:
                if isinstance(binding, Binding) and binding.description:
                    key = keymap.get(binding.id, binding.key) if binding.id else binding.key
                    table.add_row("anywhere", _key_label(key), binding.description)
            for key, text in CHAT_KEYS:
                table.add_row("message box", key, text)
            for where, bindings in (("answer", AnswerMessage.BINDINGS),
                                    ("memory pane", MemoryPane.BINDINGS)):
                for binding in bindings:
                    if isinstance(binding, Binding) and binding.description:
                        table.add_row(where, _key_label(binding.key), binding.description)
            table.add_row("answer", "1 … 9", "Show source [n] of the answer")
            table.add_row("sources", "enter", "Preview the source (e: open in $EDITOR)")
            yield table
            yield Static(
                "Change keys in config.toml: [ui] keybindings = { action = \"key\" }; "
                "the action names are in the palette's help text.",
                classes="dialog-hint", markup=False,
            )
