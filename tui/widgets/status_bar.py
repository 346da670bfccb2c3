"""One line at the bottom: Ollama connection, model, index size, sync activity, memories."""

from __future__ import annotations

from textual.reactive import reactive
from textual.widgets import Static


class StatusBar(Static):
    ollama: reactive[str] = reactive("checking…")  # "up", "down", "checking…", "no model"
    model: reactive[str] = reactive("")
    index: reactive[str] = reactive("index: loading model…")
    activity: reactive[str] = reactive("")
    memories: reactive[int | None] = reactive(None)
    dates: reactive[str] = reactive("")  # the dates the last question named ("last week")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def render(self) -> str:
        dot = {"up": "●", "down": "○"}.get(self.ollama, "◌")
        parts = [f"{dot} ollama {self.ollama}", f"model {self.model}" if self.model else ""]
        parts.append(self.index)
        if self.memories is not None:
            parts.append(f"memories {self.memories}")
        if self.dates:
            parts.append(f"dates {self.dates}")
        if self.activity:
            parts.append(self.activity)
        return "  │  ".join(p for p in parts if p)

    def watch_ollama(self, value: str) -> None:
        self.set_class(value != "up", "-offline")

    def set_index(self, files: int, chunks: int) -> None:
        self.index = f"index {files:,} files / {chunks:,} chunks"
