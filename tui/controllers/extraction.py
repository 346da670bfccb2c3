"""Idle-time memory extraction: facts from the answers are not held back until the next cadence.

After memory.extract_idle_seconds without input (keys, paste, clicks: `Activity`), the chat's
turns that memory extraction has not read yet are extracted — this run's answers, and at the
first idle moment those an earlier run left: quitting never extracts, since it would hold the
user's shell for a model call (tui/backend/chat.py `close`). A question sent meanwhile cancels
the extraction (the engine yields to the user); the turns stay pending for the next idle moment.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.workers import attempt_async

if TYPE_CHECKING:
    from tui.screens.chat import ChatScreen

IDLE_CHECKS_PER_WINDOW = 4


class Activity:
    """When the user last typed or clicked (the app records it), or an answer ended."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        # The clock is a seam for tests: a loaded machine stretches the real gaps between
        # keys past any idle threshold, so "typing keeps it busy" is tested on a clock the
        # test moves.
        self.clock = clock
        self.last = clock()

    def touch(self) -> None:
        self.last = self.clock()

    def idle_for(self) -> float:
        return self.clock() - self.last


class IdleExtraction:
    def __init__(self, screen: ChatScreen, activity: Activity, idle_seconds: float, *,
                 busy: Callable[[], bool]) -> None:
        self.screen = screen
        self.activity = activity
        self.idle_seconds = idle_seconds
        self._busy = busy  # an answer is being written: not idle
        self._unextracted = 0  # answers in this run not through memory extraction yet
        self._earlier = True  # turns an earlier run may have left unextracted
        self._extracting = False

    def start(self) -> None:
        if self.idle_seconds > 0:
            every = max(0.05, min(self.idle_seconds / IDLE_CHECKS_PER_WINDOW, 5.0))
            self.screen.set_interval(every, self._check)

    def answered(self) -> None:
        """An answer was stored: one more turn for extraction."""
        self._unextracted += 1

    def _check(self) -> None:
        if (not (self._unextracted or self._earlier) or self._extracting or self._busy()
                or self.screen.quitting
                or self.activity.idle_for() < self.idle_seconds):
            return
        self._extracting = True
        self.screen.run_worker(self._extract(self._unextracted), group="extract")

    async def _extract(self, pending: int) -> None:
        try:
            outcome = await attempt_async(self.screen.app, "Extracting memories",
                                          lambda: self._run(pending))
        finally:
            self._extracting = False
        ran, extracted = outcome if outcome is not None else (True, 0)
        if not ran:
            return
        # A failed extraction leaves the turns pending: the next cadence or the next run retries.
        self._unextracted = max(0, self._unextracted - pending)
        self.activity.touch()
        if extracted:
            self.screen.memory.poll()  # new memories appear at once, highlighted
            self.screen.status.refresh_stats()

    async def _run(self, pending: int) -> tuple[bool, int]:
        """(whether there was anything to extract, memories extracted)."""
        chat = self.screen.backend.chat
        if self._earlier:
            self._earlier = False
            if not pending and not await chat.pending_extraction():
                return False, 0
        return True, await chat.extract_pending()
