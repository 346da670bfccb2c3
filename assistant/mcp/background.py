"""The server's idle-time work: embedding the events agents logged (so they are found by
meaning too) and summarising runs of events, only while no tool call is in flight and none
came for a moment: `log_event` stays a short write however fast an agent logs, and the model
work never competes with an answer. Killed at any point, the next server (or `brain events
search`) picks up what is left: pending vectors are rows without one, due summaries are
events no summary covers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from assistant.mcp.handlers import BrainTools
from indexing.threads import start_daemon

log = logging.getLogger(__name__)

IDLE_SECONDS = 1.0  # no call for this long: idle enough to embed
SUMMARY_RETRY_SECONDS = 300.0  # after a failed or empty summary pass


class IdleWork:
    def __init__(self, tools: BrainTools, *, busy: Callable[[], bool],
                 idle_for: Callable[[], float]) -> None:
        self._tools = tools
        self._busy = busy
        self._idle_for = idle_for
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._next_summary = 0.0

    def start(self) -> None:
        start_daemon("mcp-idle", self._run)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def poke(self) -> None:
        """An event was logged: there is something to embed once idle."""
        self._wake.set()

    def _idle(self) -> bool:
        return not self._stop.is_set() and not self._busy() and \
            self._idle_for() >= IDLE_SECONDS

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=30.0)
            self._wake.clear()
            while not self._stop.is_set() and not self._idle():
                time.sleep(0.2)
            try:
                self._embed()
                self._summarize()
            except Exception:  # never the server's end: logged, tried again later
                log.exception("idle work of brain mcp failed")

    def _embed(self) -> None:
        service = self._tools.events()
        while self._idle() and service.embed_pending(limit=64):
            pass

    def _summarize(self) -> None:
        config = self._tools.ctx.config.events
        if time.monotonic() < self._next_summary or not self._idle():
            return
        from assistant.events.summaries import summarize_due
        from assistant.memory.service import configured_chat_fn

        written = summarize_due(
            self._tools.events().store, configured_chat_fn(self._tools.ctx.config),
            every=config.summarize_every, idle_seconds=config.summarize_idle_seconds,
            keep_going=self._idle)
        if not written:
            self._next_summary = time.monotonic() + SUMMARY_RETRY_SECONDS
        else:
            self._wake.set()  # the summaries want their vectors
