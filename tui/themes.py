"""Themes are data: TOML files mapping to Textual `Theme` fields, plus optional extra CSS.

Bundled themes live in `themes/`; user themes in the config dir's `themes/` are loaded after
them (a user file with a bundled name replaces that theme). A broken user theme is reported
and skipped, never a crash at startup.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

from assistant.errors import HintedError
from themes import THEMES_DIR

DEFAULT_THEME = "brain-dark"
_COLOR_FIELDS = (
    "primary", "secondary", "warning", "error", "success", "accent",
    "foreground", "background", "surface", "panel", "boost",
)
_FLOAT_FIELDS = ("luminosity_spread", "text_alpha")
_KNOWN = {f.name for f in fields(Theme)} | {"css"}


class ThemeError(HintedError):
    """A theme file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class LoadedThemes:
    themes: tuple[Theme, ...]
    errors: tuple[str, ...]  # one line per skipped user theme file
    css: dict[str, str]  # theme name -> extra TCSS applied while that theme is active

    def names(self) -> list[str]:
        return [t.name for t in self.themes]


def theme_from_toml(path: Path) -> Theme:
    return read_theme(path)[0]


def read_theme(path: Path) -> tuple[Theme, str]:
    """The theme in `path` and its extra CSS ("" if none)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{path}: cannot read theme: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ThemeError(f"{path}: invalid TOML: {exc}") from exc
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise ThemeError(f"{path}: unknown theme key(s) {', '.join(unknown)}")
    name = data.get("name") or path.stem
    if not isinstance(name, str):
        raise ThemeError(f"{path}: name: expected string")
    if "primary" not in data:
        raise ThemeError(f"{path}: missing required key 'primary'")
    kwargs: dict[str, Any] = {"name": name}  # Theme's own fields, each checked below
    for key in _COLOR_FIELDS:
        if key in data:
            value = data[key]
            try:
                Color.parse(value)
            except (ColorParseError, TypeError) as exc:
                raise ThemeError(f"{path}: {key}: not a colour: {value!r}") from exc
            kwargs[key] = value
    for key in _FLOAT_FIELDS:
        if key in data:
            if not isinstance(data[key], (int, float)) or isinstance(data[key], bool):
                raise ThemeError(f"{path}: {key}: expected number, got {data[key]!r}")
            kwargs[key] = float(data[key])
    if "dark" in data:
        if not isinstance(data["dark"], bool):
            raise ThemeError(f"{path}: dark: expected true or false")
        kwargs["dark"] = data["dark"]
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or not all(
        isinstance(v, str) for v in variables.values()
    ):
        raise ThemeError(f"{path}: [variables]: expected a table of strings")
    kwargs["variables"] = dict(variables)
    css = data.get("css", "")
    if not isinstance(css, str):
        raise ThemeError(f"{path}: css: expected a string of Textual CSS")
    return Theme(**kwargs), css


def load_themes(user_dir: Path | None = None, bundled_dir: Path = THEMES_DIR) -> LoadedThemes:
    """Bundled themes (must be valid) then user themes (errors collected, file skipped)."""
    by_name: dict[str, Theme] = {}
    css: dict[str, str] = {}
    for path in sorted(bundled_dir.glob("*.toml")):
        theme, extra = read_theme(path)
        by_name[theme.name] = theme
        css[theme.name] = extra
    errors: list[str] = []
    if user_dir is not None and user_dir.is_dir():
        for path in sorted(user_dir.glob("*.toml")):
            try:
                theme, extra = read_theme(path)
            except ThemeError as exc:
                errors.append(str(exc))
                continue
            by_name[theme.name] = theme
            css[theme.name] = extra
    return LoadedThemes(tuple(by_name.values()), tuple(errors),
                        {name: text for name, text in css.items() if text.strip()})
