"""Idle-time summaries of agent event runs (brain mcp's log): with the same rule as memory
extraction — after memory.extract_idle_seconds without input and no answer being written — the
runs that are due (events.summarize_every / summarize_idle_seconds) become `summary` events,
also when no MCP server is running any more. Nothing due, or the model down: the next try
waits RETRY_SECONDS; quitting never waits for it (a run left unsummarised stays due)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.controllers.extraction import Activity
from tui.workers import attempt, quietly

if TYPE_CHECKING:
    from tui.screens.chat import ChatScreen


RETRY_SECONDS = 300.0
CHECKS_PER_WINDOW = 4


class IdleEventSummaries:
    def __init__(self, screen: ChatScreen, activity: Activity, idle_seconds: float, *,
                 busy: Callable[[], bool]) -> None:
        self.screen = screen
        self.activity = activity
        self.idle_seconds = idle_seconds
        self._busy = busy
        self._running = False
        self._next = 0.0
        self.written = 0  # summaries written in this run

    def start(self) -> None:
        if self.idle_seconds > 0:
            every = max(0.05, min(self.idle_seconds / CHECKS_PER_WINDOW, 5.0))
            self.screen.set_interval(every, self._check)

    def _check(self) -> None:
        if (self._running or self._busy() or self.screen.quitting
                or time.monotonic() < self._next
                or self.activity.idle_for() < self.idle_seconds):
            return
        self._running = True
        self.screen.run_worker(self._summarize(), group="event-summaries")

    async def _summarize(self) -> None:
        try:
            # The model or the log unavailable: tried again later, quietly (in the log).
            written = await attempt(self.screen.app, "Agent event summaries",
                                    self.screen.backend.events.summarize_due,
                                    shown=quietly) or 0
        finally:
            self._running = False
        self.written += written
        if not written:
            self._next = time.monotonic() + RETRY_SECONDS
