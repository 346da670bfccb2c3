"""UI state that survives a restart: theme, pane sizes and visibility, last session.

Stored as JSON in `paths.ui_state_file`. A missing or corrupt file means defaults (the state
is a convenience; losing it must never stop the app from opening). Writes are atomic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from assistant.paths import FILE_MODE

MIN_SIDE_WIDTH = 24
MAX_SIDE_WIDTH = 120
MIN_SOURCES_SHARE = 10
MAX_SOURCES_SHARE = 90


@dataclass(frozen=True, slots=True)
class UiState:
    theme: str = ""  # empty: the config's ui.theme
    side_width: int = 56  # columns of the right-hand column (sources + memories)
    sources_share: int = 55  # percent of the right column given to sources
    show_sources: bool = True
    show_memories: bool = True
    last_session: str | None = None

    def clamped(self) -> UiState:
        return replace(
            self,
            side_width=max(MIN_SIDE_WIDTH, min(MAX_SIDE_WIDTH, self.side_width)),
            sources_share=max(MIN_SOURCES_SHARE, min(MAX_SOURCES_SHARE, self.sources_share)),
        )


def load_state(path: Path) -> UiState:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return UiState()
    if not isinstance(data, dict):
        return UiState()
    defaults = UiState()
    kwargs: dict[str, Any] = {}
    for f in fields(UiState):
        value = data.get(f.name, getattr(defaults, f.name))
        expected = type(getattr(defaults, f.name))
        if f.name == "last_session":
            kwargs[f.name] = value if isinstance(value, str) and value else None
        elif isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
            kwargs[f.name] = value
    return UiState(**kwargs).clamped()


def save_state(path: Path, state: UiState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(state), handle, indent=2)
    os.replace(tmp, path)


class StateStore:
    """The UI state of this run: loaded once, saved on every change. A failed save is reported
    through `on_error` (the layout is a convenience: it never stops the app)."""

    def __init__(self, path: Path, on_error: Callable[[str], None]) -> None:
        self.path = path
        self.state = load_state(path)
        self._on_error = on_error

    def update(self, **changes: Any) -> UiState:
        self.state = replace(self.state, **changes).clamped()
        try:
            save_state(self.path, self.state)
        except OSError as exc:
            self._on_error(f"Cannot save the layout: {exc}")
        return self.state
