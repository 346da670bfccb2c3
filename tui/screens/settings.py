"""The settings (F5): every setting with its value and meaning; Enter changes the selected one.

A change goes to the config file with the file's own rules (assistant/config_edit.py: the
same validation as loading it, comments and other keys kept; a bad value is a one-line error
in the prompt and nothing is written). What the chat engine reads at every turn is applied at
once; anything else says it applies on restart, and its row shows the value still running.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from assistant.config import Config, ConfigError, range_text
from assistant.config_load import load_config
from assistant.config_render import settings_table
from tui.plain import plain_text

Apply = Callable[[dict[str, Any]], Awaitable[None]]


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return repr(value) if value else "(none)"
    return str(value)


def _one_line(exc: ConfigError) -> str:
    return exc.message + (f" ({exc.hint})" if exc.hint else "")


def _value(config: Config, name: str) -> Any:
    section, key = name.split(".", 1)
    return getattr(getattr(config, section), key)


def _with(config: Config, section: str, key: str, value: Any) -> Config:
    return replace(config, **{section: replace(getattr(config, section), **{key: value})})


class SettingsScreen(ModalScreen[Config]):
    """Dismissed with the settings now running (the given ones plus what was applied live)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", priority=True),  # (type-ahead: chat.py)
    ]

    def __init__(self, running: Config, config_path: Path, apply: Apply) -> None:
        super().__init__()
        self.running = running
        self.config_path = config_path
        self.apply = apply
        self.problem = ""
        try:
            self.saved = load_config(config_path)
        except ConfigError as exc:  # edited into a broken state since start: show, refuse
            self.saved, self.problem = running, str(exc)
        self.meanings = {f"{s}.{k}": h for s, k, _, h in settings_table(running)}

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="settings"):
            yield Static("Settings — Enter changes the selected one", classes="dialog-title",
                         markup=False)
            table: DataTable[str | Text] = DataTable(cursor_type="row", zebra_stripes=True)
            self.table_columns = table.add_columns("setting", "value", "meaning")
            for section, key, _, help_text in settings_table(self.saved):
                name = f"{section}.{key}"
                table.add_row(name, self._cell(name), help_text, key=name)
            yield table
            yield Static(self.problem or f"Saved to {self.config_path}; lists and tables are "
                         "changed there (`brain config edit`).", id="settings-status",
                         classes="dialog-hint", markup=False)

    def _cell(self, name: str) -> Text:
        shown = _show(_value(self.saved, name))
        running = _value(self.running, name)
        if running != _value(self.saved, name):
            shown += f" (on restart; running: {_show(running)})"
        return plain_text(shown)

    def _say(self, text: str) -> None:
        self.query_one("#settings-status", Static).update(plain_text(text))

    def action_close(self) -> None:
        self.dismiss(self.running)

    @on(DataTable.RowSelected)
    def _edit(self, event: DataTable.RowSelected) -> None:
        from assistant.config_edit import editable, prepare
        from tui.screens.text_prompt import TextPrompt

        name = str(event.row_key.value)
        section, key = name.split(".", 1)
        if self.problem:
            self._say(self.problem)
            return
        if not editable(section, key):
            self._say(f"{name} is a list or table: change it in {self.config_path} "
                      "(`brain config edit`)")
            return
        allowed = range_text(section, key)
        title = f"{name}: {self.meanings.get(name, '')}" + (f" Range: {allowed}." if allowed
                                                           else "")

        def check(raw: str) -> str | None:
            try:
                prepare(self.config_path, section, key, raw)
            except ConfigError as exc:
                return _one_line(exc)
            return None

        def chosen(raw: str | None) -> None:
            if raw is not None:
                self.run_worker(self._save(section, key, raw), exclusive=True)

        self.app.push_screen(TextPrompt(title, _show(_value(self.saved, name)),
                                        validate=check), chosen)

    async def _save(self, section: str, key: str, raw: str) -> None:
        from assistant.chat.live_settings import live_changes
        from assistant.config_edit import prepare, save

        name = f"{section}.{key}"
        try:  # again: the file may have changed while the prompt was open
            edit = prepare(self.config_path, section, key, raw)
            save(self.config_path, edit)
        except ConfigError as exc:
            self._say(f"{name} not changed: {_one_line(exc)}")
            return
        except OSError as exc:
            self._say(f"{name} not changed: cannot write {self.config_path}: "
                      f"{exc.strerror or exc}")
            return
        self.saved = edit.config
        wanted = _with(self.running, section, key, edit.value)
        changes = live_changes(self.running, wanted)
        if changes is not None:
            await self.apply(changes)
            self.running = wanted
            note = "applied now"
        elif wanted == self.running:
            note = "as running"
        else:
            note = "applies on restart"
        self.query_one(DataTable).update_cell(name, self.table_columns[1], self._cell(name))
        self._say(f"{name} = {_show(edit.value)} saved to {self.config_path}; {note}")
