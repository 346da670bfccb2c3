"""Indexing a session's new turn or summary for conversation recall, off the answer's path.

The conversation index is blocking (SQLite, the embedding model) and bound to the thread that
opened it, so every call runs on the chat's conversations thread. A failure is logged, not
raised: the next sync of the index catches up with whatever was missed.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Protocol

log = logging.getLogger(__name__)


class Indexes(Protocol):
    def index(self, session_id: str) -> None: ...


class ConversationIndexer:
    def __init__(self, conversations: Indexes | None, thread: Executor) -> None:
        self.conversations = conversations
        self.thread = thread
        self._running: set[asyncio.Future[None]] = set()

    def later(self, session_id: str) -> None:
        """Index the session's new units on the conversations thread; `wait()` waits for it.
        Nothing when there is no conversation index or no running loop."""
        conversations = self.conversations
        if conversations is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        future = loop.run_in_executor(self.thread, conversations.index, session_id)
        self._running.add(future)

        def done(f: asyncio.Future[None]) -> None:
            self._running.discard(f)
            if not f.cancelled() and f.exception() is not None:
                log.warning("indexing the conversation failed (the next sync catches up): %s",
                            f.exception())

        future.add_done_callback(done)

    async def wait(self, timeout: float | None = None) -> None:
        if self._running:
            await asyncio.wait(set(self._running), timeout=timeout)
