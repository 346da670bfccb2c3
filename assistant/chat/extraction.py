"""Long-term memory extraction over a session's stored turns, as the chat engine's background
work (the TUI's idle moments, every few turns, before old turns are folded into the rolling
summary, and at the end of `brain ask`).

Each session keeps its own pointer (`extracted_through`): a batch's progress is saved as soon
as it is read, a failed or cancelled batch stays pending and is taken up again later from the
turns stored verbatim. The extractor itself (assistant/memory/) is blocking and shared with the
CLI: it runs on the chat's memory thread, its model requests on the engine's loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import Executor
from functools import partial
from typing import Any, Protocol

from assistant.chat.background import BackgroundComplete, BackgroundJobs
from assistant.memory.extraction import batches as index_batches
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import Turn
from indexing.errors import log_failure

log = logging.getLogger(__name__)

EXTRACTION_BATCH_TOKENS = 1500  # user text per extraction request (memory/extraction.py)
EXTRACTION_NUM_PREDICT = 1024
PENDING_SESSIONS = 5  # sessions with unextracted turns taken up per idle extraction



class Extracts(Protocol):
    """The memory side (engine.MemorySource)."""

    def extract(self, exchanges: Sequence[tuple[str, str]], *, session_id: str,
                chat: Any = None) -> None: ...


class MemoryExtraction:
    def __init__(self, store: SessionStore, memory: Extracts | None, *, thread: Executor,
                 store_thread: Executor, jobs: BackgroundJobs,
                 complete: BackgroundComplete) -> None:
        self.store = store
        self.memory = memory
        self.thread = thread  # the memory store's own thread
        # The session store's (never the event loop: another process may hold its write lock).
        self.store_thread = store_thread
        self.jobs = jobs
        self._complete = complete

    def unextracted(self, session_id: str, through: int | None = None) -> list[Turn]:
        """The session's turns not read for memories yet (up to seq `through`). Blocking."""
        session = self.store.get(session_id)
        return [
            t for t in self.store.turns(session_id, after_seq=session.extracted_through)
            if t.status != "failed" and (through is None or t.seq <= through)
        ]

    def pending_sessions(self, current: str | None) -> list[str]:
        """The current session, then up to PENDING_SESSIONS others with turns not read.
        Blocking."""
        first = [current] if current is not None else []
        others = [sid for sid in self.store.unextracted(PENDING_SESSIONS) if sid not in first]
        return first + others

    async def extract(self, session_id: str, turns: list[Turn]) -> bool:
        """Extraction over `turns`, one request per batch of at most EXTRACTION_BATCH_TOKENS
        of user text (each batch's progress is saved); False if a batch failed or the job
        was cancelled by a question (the rest stays pending)."""
        if not turns or self.memory is None:
            return True  # nothing to read, or memory off: nothing to extract into
        memory = self.memory
        call = self.jobs.model_call(
            lambda messages, schema: self._complete(messages, schema, EXTRACTION_NUM_PREDICT))
        loop = asyncio.get_running_loop()
        try:
            for batch in batches(turns, EXTRACTION_BATCH_TOKENS):
                exchanges = [(t.question, t.answer) for t in batch]
                try:
                    await loop.run_in_executor(
                        self.thread,
                        partial(memory.extract, exchanges, session_id=session_id, chat=call),
                    )
                # A RuntimeError carries the outcome's error, logged where it arose
                # (MemoryService.extract); anything else (opening the memory) is new here.
                except Exception as exc:
                    log_failure(log, "memory extraction failed", exc, foreseen=(RuntimeError,))
                    return False
                if call.cancelled:
                    return False
                await loop.run_in_executor(
                    self.store_thread,
                    partial(self.store.set_extracted, session_id, batch[-1].seq))
            return True
        finally:
            self.jobs.release(call)


def batches(turns: list[Turn], max_tokens: int) -> list[list[Turn]]:
    """Consecutive groups of turns with at most `max_tokens` of user text each."""
    return [[turns[i] for i in group]
            for group in index_batches([t.question for t in turns], max_tokens)]
