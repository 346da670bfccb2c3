"""The settings in effect (read-only), with their help text and where they come from."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from assistant.config import Config, settings_table
from tui.plain import plain_text


def _show(value: object) -> str:
    if isinstance(value, (list, dict)):
        return repr(value) if value else "(none)"
    return str(value)


class SettingsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", priority=True),  # (type-ahead: chat.py)
    ]

    def __init__(self, config: Config, config_path: str) -> None:
        super().__init__()
        self.config = config
        self.config_path = config_path

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="settings"):
            yield Static("Settings in effect (read-only here)", classes="dialog-title",
                         markup=False)
            table: DataTable[str | Text] = DataTable(cursor_type="row", zebra_stripes=True)
            table.add_columns("setting", "value", "meaning")
            for section, key, value, help_text in settings_table(self.config):
                table.add_row(f"{section}.{key}", plain_text(_show(value)), help_text)
            yield table
            yield Static(
                f"Edit {self.config_path} to change them, then restart "
                "(`brain config show` prints the values in effect).",
                classes="dialog-hint", markup=False,
            )
