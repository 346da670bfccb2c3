"""The model's reasoning above its answer, as Open WebUI and oterm show it: a dim, collapsed
"thinking… (N s)" line while the model reasons, "thought for N s" once the answer starts.
A click or Enter on that line, or `t` on the answer, shows the reasoning itself.

Only for showing: the reasoning is never part of the answer's text, so it is not copied with
the answer, never cited, and — the engine keeps it apart — never stored or sent back to the
model.
"""

from __future__ import annotations

import time

from textual.timer import Timer
from textual.widgets import Collapsible, Static

from assistant.plain_text import plain

TICK_SECONDS = 1.0  # the title's clock while the model reasons


class ThinkingBlock(Collapsible):
    def __init__(self, *, started: float | None = None) -> None:
        """`started`: when the reasoning began (monotonic), if before this block was made."""
        self._text_view = Static("", markup=False, classes="thinking-text")
        super().__init__(self._text_view, title="thinking…", collapsed=True, classes="thinking")
        self.text = ""
        self.thinking = True  # the model is still reasoning
        self.stopped = False  # the answer was stopped while the model reasoned
        self._started = started if started is not None else time.monotonic()
        self._seconds = 0.0
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        self._show_title()
        if self.thinking:
            self._timer = self.set_interval(TICK_SECONDS, self._show_title)

    @property
    def seconds(self) -> float:
        if self.thinking:
            self._seconds = time.monotonic() - self._started
        return self._seconds

    def add(self, text: str) -> None:
        self.set_text(self.text + text)

    def set_text(self, text: str) -> None:
        self.text = text
        self._text_view.update(plain(text.strip()))

    def end(self, *, stopped: bool = False) -> None:
        """The reasoning is over: the answer started, the reply ended, or it was stopped."""
        if not self.thinking:
            return
        self._seconds = time.monotonic() - self._started
        self.thinking = False
        self.stopped = stopped
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._show_title()

    def _show_title(self) -> None:
        seconds = f"{self.seconds:.0f} s"
        if self.thinking:
            self.title = f"thinking… ({seconds})"
        elif self.stopped:
            self.title = f"thinking stopped after {seconds}"
        else:
            self.title = f"thought for {seconds}"
