"""Every key, grouped by where it works, built from the live bindings (so overrides show).

Cells are plain text (a DataTable reads strings as Rich markup: "[n]" would vanish), keys are
shown as people read them ("Ctrl+Q", "Alt+←", "+"), and each app action shows the name that
`[ui] keybindings` takes.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tui.actions import ACTIONS, bound_key, key_label
from tui.widgets.memory_pane import MemoryPane
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane

CHAT_KEYS = (
    ("enter", "Send the message"),
    ("shift+enter,ctrl+j", "New line in the message"),
    ("up,down", "Previous / next message from the input history"),
    ("escape", "Stop the answer being generated"),
    ("tab,shift+tab", "Move between messages and panes"),
)


def _row(where: str, key: str, action: str, name: str = "") -> tuple[Text, ...]:
    return Text(where), Text(key), Text(action), Text(name, style="dim")


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1", "dismiss", "Close", priority=True),  # (type-ahead: chat.py)
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="help"):
            yield Static("Keys", classes="dialog-title", markup=False)
            table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns("where", "key", "action", "config name")
            for action in ACTIONS:
                key = bound_key(self.app, action.name)
                table.add_row(*_row("anywhere", key_label(key) if key else "palette only",
                                    action.title, action.name))
            for key, text in CHAT_KEYS:
                table.add_row(*_row("message box", key_label(key), text))
            for where, bindings in (("answer", AnswerMessage.BINDINGS),
                                    ("sources", SourcesPane.BINDINGS),
                                    ("memory pane", MemoryPane.BINDINGS)):
                for binding in bindings:
                    if isinstance(binding, Binding) and binding.description:
                        table.add_row(*_row(where, key_label(binding.key), binding.description))
            table.add_row(*_row("answer", "1 … 9", "Show source [n] of the answer"))
            table.add_row(*_row("sources", "Enter", "Preview the source (e: open in $EDITOR)"))
            yield table
            yield Static(
                "Change keys in config.toml: [ui] keybindings = { config_name = \"key\" }, "
                "e.g. { help = \"f10\" }. Ctrl+P opens the palette (every action by name).",
                classes="dialog-hint", markup=False,
            )
