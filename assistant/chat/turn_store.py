"""A turn's last stage: storing it, however it ends — complete, interrupted (the partial
answer), or failed (the user's message and the error) —, so a message typed is never lost and
`retry()` can send it again.

The write runs on the sessions thread, never on the event loop: another process holding the
database's write lock (`brain sessions import`) makes it wait up to SQLite's busy timeout, and
the UI must go on meanwhile. Once started, a write is finished and reported even if the turn is
cancelled while it runs (a cancel then joins it instead of writing the turn a second time).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace
from functools import partial

from assistant.chat.citations import mark_cited, mark_recalled
from assistant.chat.conversation_indexer import ConversationIndexer
from assistant.chat.events import Done, Emit, Failed
from assistant.chat.recital import without_recital
from assistant.chat.turn_state import TurnState
from assistant.llm.errors import ChatError
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import Session, Turn

log = logging.getLogger(__name__)



class TurnRecorder:
    def __init__(self, store: SessionStore, thread: Executor, indexer: ConversationIndexer,
                 session: Callable[[], Session]) -> None:
        self.store = store
        self.thread = thread  # the sessions thread
        self.indexer = indexer
        self._session = session  # the current session, created if need be (blocking)

    async def complete(self, state: TurnState, emit: Emit) -> Turn:
        state.ms("total_ms")
        turn = await self.record(state, "complete")
        report(state, emit, Done(turn))
        return turn

    async def interrupted(self, state: TurnState, emit: Emit) -> None:
        if state.reported:
            return
        if state.write is None:
            state.ms("total_ms")
        report(state, emit, Done(await self.record(state, "interrupted")))

    async def failed(self, state: TurnState, emit: Emit, error: ChatError) -> None:
        if state.reported:
            return
        if state.write is None:
            state.ms("total_ms")
        turn = await self.record(state, "failed", error=str(error.message))
        report(state, emit, Failed(error, state.answer, turn))

    async def record(self, state: TurnState, status: str, error: str = "") -> Turn:
        """The stored turn (the one write of this turn: a later call joins it)."""
        if state.write is None:
            state.recorded = True
            loop = asyncio.get_running_loop()
            state.write = loop.run_in_executor(
                self.thread, partial(self._write, loop, state, status, error))
        return await asyncio.shield(state.write)

    def _write(self, loop: asyncio.AbstractEventLoop, state: TurnState, status: str,
               error: str) -> Turn:
        session = self._session()
        # Only the answer's own words cite: a recited `[2] path:lines` header does not.
        sources, invented = mark_cited(state.sources,
                                       without_recital(state.answer, state.sources))
        if invented:
            log.info("answer cites sources that do not exist: %s", invented)
        recalled, invented = mark_recalled(state.conversations, state.answer)
        if invented:
            log.info("answer cites earlier conversations that do not exist: %s", invented)
        stored = self.store.add_turn(
            session.id, state.message, state.answer, status=status, model=state.model,
            error=error, low_confidence=state.low_confidence, sources=sources,
            memories=state.memories, tools=state.tools, timings=state.timings,
            log_id=state.log_id, truncated=state.truncated, conversations=recalled,
        )
        if state.answer or status != "failed":
            # A turn that failed before any answer (Ollama down) has nothing to recall, and
            # indexing it would make the error wait for the conversation index's catch-up
            # (Chroma and the model loading): `brain ask` must fail at once (issue 15).
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self.indexer.later, session.id)
        # The live items carry the retriever's evidence (`data`, `hit`) that is not stored
        # (and a recalled conversation deleted meanwhile is shown as stored: blanked).
        live = {r.n: r for r in recalled}
        conversations = tuple(
            live[c.n] if c.n in live and not c.item.deleted else c for c in stored.conversations
        )
        return replace(stored, sources=sources, memories=tuple(state.memories),
                       conversations=conversations)


def report(state: TurnState, emit: Emit, event: Done | Failed) -> None:
    """The turn's final event, once."""
    state.reported = True
    emit(event)
