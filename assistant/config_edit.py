"""Changing one setting in the config file (the TUI's settings screen), keeping the rest of it.

The file is the user's: comments, the order of keys, other settings and their formatting stay
as they are. Only the one line changes — an existing `key = …` of the section (its trailing
comment kept), else the commented-out default the first run wrote (`# key = …`), else a new
line at the end of the section (or a new section). The result is checked twice before it is
written: it parses to exactly the old settings with this one changed (so a line this editor
misread can never change another value), and it passes the same validation as a loaded file
(`config_from_dict` + `config_of_file`). Then it replaces the file atomically.

Lists and tables (indexing.include, ui.keybindings, personas) are edited in the file itself.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
import typing
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from assistant.config import SECTION_TYPES, Config, ConfigError
from assistant.config_load import config_from_dict, config_of_file, type_name
from assistant.config_render import toml_key, toml_value
from assistant.paths import FILE_MODE

SCALARS = (bool, int, float, str)
_TRUE = {"true", "yes", "on"}
_FALSE = {"false", "no", "off"}
_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


@dataclass(frozen=True, slots=True)
class Edit:
    """A validated change, not written yet: the file's whole settings after it, and its text."""

    section: str
    key: str
    value: Any
    config: Config
    text: str


def setting_type(section: str, key: str) -> Any:
    """The schema type of `section.key`; ConfigError for a name that is no setting."""
    cls = SECTION_TYPES.get(section)
    if cls is None or key not in {f.name for f in fields(cls)}:
        raise ConfigError(f"{section}.{key}: no such setting")
    return typing.get_type_hints(cls)[key]


def editable(section: str, key: str) -> bool:
    """Whether the settings screen can change it (a scalar; lists and tables are not)."""
    return setting_type(section, key) in SCALARS


def parse_value(section: str, key: str, raw: str) -> Any:
    """The typed value typed in for `section.key`: "0.5", "true", "qwen3:4b"."""
    tp = setting_type(section, key)
    text = raw.strip()
    where = f"{section}.{key}"
    if tp not in SCALARS:
        raise ConfigError(f"{where}: a {type_name(tp)} is changed in the file "
                          "(`brain config edit`)")
    if tp is str:
        return text
    if tp is bool:
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise ConfigError(f"{where}: expected true or false, got {text!r}")
    try:
        return int(text) if tp is int else float(text)
    except ValueError:
        raise ConfigError(f"{where}: expected {type_name(tp)}, got {text!r}") from None


def prepare(path: Path, section: str, key: str, raw: str) -> Edit:
    """The change of `section.key` to `raw`, validated as the file would be; nothing written.
    ConfigError (one line) when the value or the file does not allow it."""
    value = parse_value(section, key, raw)
    try:
        old_text = path.read_text(encoding="utf-8-sig") if path.exists() else ""
        old = tomllib.loads(old_text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read as TOML ({exc}); fix it with "
                          "`brain config edit` first") from exc
    text = set_line(old_text, section, key, value)
    expected = copy.deepcopy(old)
    expected.setdefault(section, {})[key] = value
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        parsed = None
    if parsed != expected:  # a line this editor misread: never risk another setting
        raise ConfigError(f"{section}.{key}: cannot change it in {path} without touching other "
                          "lines; change it with `brain config edit`")
    config = config_of_file(config_from_dict(parsed), path)
    return Edit(section, key, value, config, text)


def save(path: Path, edit: Edit) -> None:
    """Write the edited file in place of the old one (a temp file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".toml.{os.getpid()}.tmp")
    tmp.write_text(edit.text, encoding="utf-8")
    tmp.chmod(FILE_MODE)
    tmp.replace(path)


def set_line(text: str, section: str, key: str, value: Any) -> str:
    """`text` with `key = value` set in [section]; every other line as it was."""
    line = f"{toml_key(key)} = {toml_value(value)}"
    lines = text.splitlines()
    start, end = _section_bounds(lines, section)
    if start is None:
        tail = [""] if lines and lines[-1].strip() else []
        return "\n".join([*lines, *tail, f"[{section}]", line]) + "\n"
    name = re.escape(key)
    assigned = re.compile(rf"^(\s*{name}\s*=\s*)(\"[^\"\\]*\"|'[^']*'|[^\"'#\s]+)(\s*#.*)?$")
    default = re.compile(rf"^\s*#\s*{name}\s*=")
    for i in range(start + 1, end):
        found = assigned.match(lines[i])
        if found:
            lines[i] = found.group(1) + toml_value(value) + (found.group(3) or "")
            return "\n".join(lines) + "\n"
    at = next((i for i in range(start + 1, end) if default.match(lines[i])), None)
    if at is not None:
        lines[at] = line  # the commented default becomes the setting, its help kept above
    else:
        last = max((i for i in range(start, end) if lines[i].strip()), default=start)
        lines.insert(last + 1, line)
    return "\n".join(lines) + "\n"


def _section_bounds(lines: list[str], section: str) -> tuple[int | None, int]:
    """(index of the [section] header or None, index where the section ends)."""
    start: int | None = None
    for i, text in enumerate(lines):
        header = _HEADER.match(text)
        if header is None:
            continue
        if start is not None:
            return start, i
        if header.group(1).strip() == section:
            start = i
    return start, len(lines)
