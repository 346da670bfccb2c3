"""Which session summaries to write, and writing one (the chat engine runs these as background
jobs, in idle time).

A session with at least MIN_SUMMARY_TURNS turns gets a short model-written summary
(assistant/conversations/summaries.py: prompt, schema, parsing, storage), indexed as a unit of
its own, when it goes idle or is closed. Closed sessions of the last SUMMARY_BACKLOG_DAYS days
still behind are caught up a few at a time. A reply that could not be used is not asked for
again in this process until the session has new turns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from functools import partial
from typing import TypeVar

from assistant.chat.background import BackgroundComplete
from assistant.conversations.summaries import (
    NUM_PREDICT,
    SUMMARY_SCHEMA,
    InvalidSummary,
    parse_summary,
    save_summary,
    sessions_behind,
    summary_messages,
)
from assistant.sessions.store import SessionNotFound, SessionStore

log = logging.getLogger(__name__)
T = TypeVar("T")

MIN_SUMMARY_TURNS = 2  # a one-turn session is its own index unit already
SUMMARY_BACKLOG_DAYS = 7  # closed sessions still unsummarised after this are left alone
SUMMARY_BATCH = 3  # session summaries per idle job at most (each is one model request)



class SessionSummarizer:
    def __init__(self, store: SessionStore, *, complete: BackgroundComplete,
                 model: Callable[[], str], written: Callable[[str], None],
                 thread: Executor) -> None:
        self.store = store
        self._thread = thread  # the session store's calls, off the event loop
        self._complete = complete
        self._model = model  # the session's model at the time of writing
        self._written = written  # a summary was saved for this session (index it)
        self._failed: dict[str, int] = {}  # session → turn seq its summary failed at

    async def catch_up(self, *, exclude: str | None) -> None:
        """Summaries of the sessions that need one, the latest first, at most SUMMARY_BATCH
        (`exclude`: the session in use, summarised only once it is idle)."""
        behind = await self._on_store(partial(
            sessions_behind, self.store, min_turns=MIN_SUMMARY_TURNS,
            since=time.time() - SUMMARY_BACKLOG_DAYS * 86400, exclude=exclude,
        ))
        done = 0
        for session_id, last_seq in behind:
            if self._failed.get(session_id) == last_seq:
                continue  # its reply was unusable at this point: not again in this process
            await self.write(session_id)
            done += 1
            if done >= SUMMARY_BATCH:
                break

    async def write(self, session_id: str) -> bool:
        """Write the summary of one session (its turns as they are now); False when there was
        nothing to write or the model's reply was unusable."""
        try:
            session = await self._on_store(partial(self.store.get, session_id))
        except SessionNotFound:
            return False
        turns = [t for t in await self._on_store(partial(self.store.turns, session_id))
                 if t.status != "failed"]
        if len(turns) < MIN_SUMMARY_TURNS:
            return False
        through = turns[-1].seq
        reply = await self._complete(
            summary_messages(session.title, [(t.question, t.answer) for t in turns]),
            SUMMARY_SCHEMA, NUM_PREDICT,
        )
        try:
            summary = parse_summary(reply)
        except InvalidSummary as exc:
            log.info("session summary unusable (%s); not retried until the session changes", exc)
            self._failed[session_id] = through
            return False
        if not await self._on_store(partial(save_summary, self.store, session_id, summary,
                                            through_seq=through, model=self._model())):
            return False  # the session was deleted meanwhile, or a newer summary is there
        self._written(session_id)
        return True

    async def _on_store(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, call)
