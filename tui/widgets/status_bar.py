"""One line at the bottom: Ollama connection, model and what Ollama is doing before the first
token (loading it, reading the prompt), index size, sync activity, memories.

It never wraps or cuts a word: when the line is too long for the terminal, the least useful
parts go first (the layout hint, then the memory count, the model, the index size), and what
still does not fit ends at a word with "…".
"""

from __future__ import annotations

from textual import events
from textual.reactive import reactive
from textual.widgets import Static

from assistant.plain_text import plain
from tui.fit import fit_parts
from tui.wording import plural

SEPARATORS = ("  │  ", " │ ")  # the compact one before anything is dropped


class StatusBar(Static):
    ollama: reactive[str] = reactive("checking…")  # "up", "down", "checking…", "no model"
    model: reactive[str] = reactive("")
    # What Ollama does before the first token: "loading qwen3:4b… 12 s", "reading 3,200 prompt
    # tokens… 41 s" (a silent minute on a CPU must not look frozen).
    model_activity: reactive[str] = reactive("")
    index: reactive[str] = reactive("index: loading model…")
    activity: reactive[str] = reactive("")
    memories: reactive[int | None] = reactive(None)
    dates: reactive[str] = reactive("")  # the dates the last question named ("last week")
    hint: reactive[str] = reactive("")  # e.g. how to open the collapsed side panes
    undo: reactive[str] = reactive("")  # what the next undo reverts: 'undo: deleted "…" (F11)'

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)

    def render(self) -> str:
        dot = {"up": "●", "down": "○"}.get(self.ollama, "◌")
        # (text, priority): the lowest priority is dropped first when the line is too long.
        parts = [
            (f"{dot} ollama {self.ollama}", 5),
            (f"model {self.model}" if self.model else "", 2),
            (self.model_activity, 4),
            (self.index, 3),
            (f"memories {self.memories}" if self.memories is not None else "", 0),
            (f"dates {self.dates}" if self.dates else "", 3),
            (self.activity, 4),
            (self.undo, 2),
            (self.hint, 1),
        ]
        shown = [(plain(t), p) for t, p in parts if t]  # model names and errors come from outside
        return fit_parts(shown, self.content_size.width, SEPARATORS)

    def on_resize(self, event: events.Resize) -> None:
        self.refresh()

    def watch_ollama(self, value: str) -> None:
        self.set_class(value != "up", "-offline")

    def set_index(self, files: int, chunks: int) -> None:
        self.index = f"index {plural(files, 'file')} / {plural(chunks, 'chunk')}"
