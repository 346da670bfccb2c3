"""When the chat engine's background work runs: after each reply (periodic memory extraction,
folding old turns into the rolling summary, summaries of sessions closed earlier, the prompt
cache re-read), and when the user has been idle `summarize_idle_seconds` (session summaries).

One background job at a time (background.py), cancelled by the next question (Ollama serves
one request at a time, and the user's comes first); whatever it leaves, the next turn's job
picks up. Every request is the chat model's own — its model and num_ctx, so Ollama does not
reload — and every session-store call runs on the sessions thread, off the event loop.

Session summaries (summarizer.py): written when a session goes idle (`summarize_idle_seconds`
after the last answer without a new question) or is closed (a new session, another session
resumed: summarised at the next idle moment; `brain ask` summarises at its end, bounded;
quitting the app leaves it to the next run, so quitting stays instant), with the session's
model and num_ctx. Each stored turn and summary is indexed for recall off the answer's path
(conversation_indexer.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from assistant.chat.background import BackgroundJobs
from assistant.chat.conversation_indexer import ConversationIndexer
from assistant.chat.extraction import MemoryExtraction
from assistant.chat.prompt_cache import PromptCache
from assistant.chat.sources import MemorySource
from assistant.chat.summarizer import SessionSummarizer
from assistant.chat.summary import NUM_PREDICT as SUMMARY_NUM_PREDICT
from assistant.chat.summary import (
    SUMMARY_SCHEMA,
    SUMMARY_SYSTEM,
    bounded,
    clean_summary,
    summary_request,
    turns_to_fold,
)
from assistant.chat.turn_context import EnginePools, TurnContext, facts_quiet
from assistant.llm.tokens import count_tokens
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import Session, Turn

log = logging.getLogger(__name__)

T = TypeVar("T")


class BackgroundScheduler:
    def __init__(self, store: SessionStore, memory: MemorySource | None, *,
                 pools: EnginePools, indexer: ConversationIndexer, cache: PromptCache,
                 context: Callable[[], TurnContext], current: Callable[[], str | None],
                 session: Callable[[], Session | None], answering: Callable[[], bool]) -> None:
        self.store = store
        self.pools = pools
        self.cache = cache
        self._context = context
        self._current = current  # the current session's id
        self._session = session  # the current session as stored now (blocking)
        self.indexer = indexer
        self._answering = answering  # a question is being answered
        self.jobs = BackgroundJobs()
        self.extraction = MemoryExtraction(store, memory, thread=pools.memory,
                                           store_thread=pools.sessions, jobs=self.jobs,
                                           complete=self.complete)
        self.summarizer = SessionSummarizer(
            store, complete=self.complete, model=lambda: self._context().settings.model,
            written=indexer.later, thread=pools.sessions)
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop the engine runs on
        self.idle_timer: asyncio.TimerHandle | None = None

    async def _on_store(self, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pools.sessions, call)

    # --- after a reply ------------------------------------------------------------------------

    def after_turn(self, session_id: str, dropped: int) -> None:
        """Schedule what follows a reply, and the idle timer. Never delays the reply (this
        runs after `Done` was emitted)."""
        self.jobs.start(lambda: self._after_turn_job(session_id, dropped))
        self.arm_idle_timer()

    async def _after_turn_job(self, session_id: str, dropped: int) -> None:
        every = self._context().settings.extract_every_turns
        extraction = self.extraction
        if every > 0:
            turns = await self._on_store(partial(extraction.unextracted, session_id))
            if len(turns) >= every:
                await extraction.extract(session_id, turns)
        await self.fold_session(session_id, dropped)
        await self.summarize_sessions(include_current=False)
        await self.cache.warm()

    async def fold_session(self, session_id: str, dropped: int) -> None:
        """Fold the session's old turns into its rolling summary, a batch at a time."""
        settings = self._context().settings
        session = await self._on_store(partial(self.store.get, session_id))
        pending = await self._on_store(
            partial(self.store.turns, session_id, after_seq=session.summary_through))
        fold = turns_to_fold(pending, keep=settings.history_turns, dropped=dropped,
                             batch=settings.fold_batch)
        while fold:
            step = bounded(fold, count_tokens)
            await self._fold(session, step)
            session = await self._on_store(partial(self.store.get, session_id))
            fold = [t for t in fold if t.seq > session.summary_through]
            if step and session.summary_through < step[-1].seq:
                break  # the summary could not be written: retry after the next turn

    async def _fold(self, session: Session, fold: list[Turn]) -> None:
        # Facts first (nothing personal should be lost to the summary) — but a failed
        # extraction does not hold the fold back forever: it keeps its own pointer and is
        # retried after later turns and when the user is idle, from the turns stored verbatim.
        extraction = self.extraction
        turns = await self._on_store(partial(extraction.unextracted, session.id, fold[-1].seq))
        if not await extraction.extract(session.id, turns):
            log.info("folding without extraction; it will be retried")
        reply = await self.complete(
            [{"role": "system", "content": SUMMARY_SYSTEM},
             {"role": "user", "content": summary_request(session.summary, fold)}],
            SUMMARY_SCHEMA, SUMMARY_NUM_PREDICT,
        )
        summary = clean_summary(reply)
        if summary:
            await self._on_store(
                partial(self.store.set_summary, session.id, summary, fold[-1].seq))

    async def summarize_sessions(self, *, include_current: bool) -> None:
        """Summaries of the sessions that need one (the current one too, when idle)."""
        if not self._context().settings.summaries:
            return
        current = self._current()
        await self.summarizer.catch_up(exclude=None if include_current else current)

    async def complete(self, messages: list[dict[str, str]], schema: dict[str, Any],
                       num_predict: int) -> str:
        """A background request as the chat model's session wants it: the session's model
        and num_ctx (no reload), think off, a JSON schema (so even a thinking-only model
        answers at once), a capped reply."""
        ctx = self._context()
        model = ctx.settings.model
        facts = await asyncio.get_running_loop().run_in_executor(
            None, facts_quiet, ctx.catalog, model)
        self.cache.dirty = True  # this request replaces the chat's prefix in Ollama's cache
        completion = await ctx.transport.complete(
            model, messages, num_ctx=ctx.window(facts), keep_alive=ctx.settings.keep_alive,
            schema=schema, num_predict=num_predict, think=False,
        )
        if completion.done_reason == "length":
            log.info("background reply cut at %d tokens", num_predict)
        return completion.content

    # --- idle time: session summaries ---------------------------------------------------------

    def arm_idle_timer(self) -> None:
        """(Re)start the countdown to the idle work; on the engine's loop."""
        self.cancel_idle_timer()
        settings = self._context().settings
        delay = settings.summarize_idle_seconds
        if not settings.summaries or delay <= 0:
            return
        self.idle_timer = asyncio.get_running_loop().call_later(delay, self._on_idle)

    def arm_idle_timer_threadsafe(self) -> None:
        """`arm_idle_timer` from any thread (new_session/resume may run on a worker)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.arm_idle_timer)

    def cancel_idle_timer(self) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    def _on_idle(self) -> None:
        self.idle_timer = None
        if self._answering():
            return  # a question is being answered: its end re-arms the timer
        if not self.jobs.start(self._idle_job):
            self.arm_idle_timer()  # a background job is still running: wait another period

    async def _idle_job(self) -> None:
        await self.summarize_sessions(include_current=True)
        await self.cache.warm()

    # --- asked for: `brain ask`'s end, the TUI's idle extraction ------------------------------

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for background work (extraction, the rolling summary, session summaries,
        indexing the turns) to finish."""
        await self.jobs.wait(timeout)
        await self.indexer.wait(timeout)

    async def summarize(self, timeout: float | None = None) -> bool:
        """Summarise the current session now, if it needs it (`brain ask` calls this at its
        end): True when a summary was written. Runs as a background job (a question sent
        meanwhile cancels it); on timeout it is cancelled and left to a later idle moment."""
        await self.drain(timeout)
        session_id = self._current()
        if session_id is None or not self._context().settings.summaries:
            return False
        outcome: list[bool] = []

        async def job() -> None:
            outcome.append(await self.summarizer.write(session_id))

        if not self.jobs.start(job):  # another job is running
            return False
        await self.jobs.wait(timeout)
        if self.jobs.running:
            self.jobs.yield_now()
            await self.jobs.wait(5)
        await self.indexer.wait(timeout)
        return bool(outcome and outcome[0])

    async def catch_up(self, timeout: float | None = None) -> None:
        """Fold the current session's old turns into its rolling summary, as the job after a
        reply does — for a process that did not answer the turn (the detached `brain sessions
        finish` after `brain ask`). A background job already running is waited for instead."""
        session_id = self._current()
        if session_id is not None and not self.jobs.running:
            self.jobs.start(lambda: self.fold_session(session_id, 0))
        await self.jobs.wait(timeout)

    async def finish(self, timeout: float | None = None) -> bool:
        """At the end of a one-shot `brain ask`: wait for background work, then extract
        memories from the current session's turns not yet extracted. False when extraction
        failed (the turns stay pending); TimeoutError past `timeout`. The TUI never calls
        it: quitting must not wait for a model call (see extract_pending)."""
        self.jobs.drop_disposable()
        await self.drain(timeout)
        session_id = self._current()
        if session_id is None:
            return True

        async def extract() -> bool:
            turns = await self._on_store(partial(self.extraction.unextracted, session_id))
            return await self.extraction.extract(session_id, turns)

        return await asyncio.wait_for(extract(), timeout)

    async def keep_cached(self, timeout: float | None = None) -> bool:
        """At the end of `brain ask`, after its extraction and session summary: those
        requests replaced the conversation in the server's prompt cache, so have it read the
        conversation's opening again now (one generated token) — the next `brain ask -c` then
        reads only the last answer and its new message instead of the whole history. Bounded
        by `timeout` (then cancelled); True when the opening was read."""
        await self.drain(timeout)
        if not self.cache.dirty or await self._on_store(self._session) is None:
            return False
        if not self.jobs.start(self.cache.warm):
            return False
        await self.jobs.wait(timeout)
        if self.jobs.running:
            self.jobs.yield_now()
            return False
        return not self.cache.dirty

    def pending_extraction(self, memory_on: bool) -> int:
        """How many turns `extract_pending` would read: the current session's and those of the
        other sessions left pending (extraction.PENDING_SESSIONS at most). Blocking (SQLite)."""
        if not memory_on:
            return 0
        extraction = self.extraction
        return sum(len(extraction.unextracted(sid))
                   for sid in extraction.pending_sessions(self._current()))

    async def extract_pending(self, memory_on: bool, timeout: float | None = None) -> int:
        """Memory extraction now over the turns not extracted yet — the current session's,
        then those other sessions left pending (a quit does not extract: it would hold the
        user's shell for a model call). The TUI calls it after memory.extract_idle_seconds
        without input. Returns the number of turns it went through; it stops at the first
        failure, or when the user sends a question (the rest stays pending)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        await self.drain(timeout)
        if not memory_on:
            return 0
        extraction = self.extraction
        work = await self._on_store(partial(self._pending_work, extraction))
        if not work:
            return 0
        done: list[int] = []

        async def job() -> None:
            for session_id, turns in work:
                if not await extraction.extract(session_id, turns):
                    break
                done.append(len(turns))
            await self.cache.warm()

        # A job can start after the drain (the start-up's prompt warm-up once the model has
        # loaded, late on a loaded machine): let it end, then run. Returning 0 then read as
        # "nothing to extract", and the TUI did not look for an earlier run's turns again.
        while not self.jobs.start(job):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return 0
            await self.jobs.wait(left)
        await self.jobs.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return sum(done)

    def _pending_work(self, extraction: MemoryExtraction) -> list[tuple[str, list[Turn]]]:
        return [(sid, turns) for sid in extraction.pending_sessions(self._current())
                if (turns := extraction.unextracted(sid))]
