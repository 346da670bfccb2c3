"""The names of the themes a config may choose, without importing Textual.

A theme is a TOML file: bundled ones in the `themes` package, the user's in the config dir's
themes/. Its name is its `name` key, else the file name (as tui/themes.py reads them). A user
file that cannot be read is skipped here; the TUI reports what is wrong with it.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path


def _name(data: bytes, stem: str) -> str | None:
    try:
        parsed = tomllib.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = parsed.get("name", stem)
    return name if isinstance(name, str) else None


def known_theme_names(user_themes: Path | None = None) -> list[str]:
    names: set[str] = set()
    for entry in resources.files("themes").iterdir():
        if entry.name.endswith(".toml"):
            name = _name(entry.read_bytes(), entry.name.removesuffix(".toml"))
            if name:
                names.add(name)
    if user_themes is not None and user_themes.is_dir():
        for path in user_themes.glob("*.toml"):
            try:
                name = _name(path.read_bytes(), path.stem)
            except OSError:
                continue
            if name:
                names.add(name)
    return sorted(names)
