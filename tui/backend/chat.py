"""The chat for the UI: the async engine, driven on Textual's own event loop.

There is one road for a turn: the chat controller's async worker awaits `ask()` and iterates the
returned `CoreTurn`, which reads the engine's `TurnStream` on the same loop and converts each
core event into its view type, once. Nothing polls and no thread sits between the engine and
the screen: `cancel()` cancels the engine's task directly, which closes the HTTP stream to Ollama
at once whatever the token rate. The engine's blocking parts (search, recall, model facts) run
on daemon threads (assistant/daemon_pool.py: the app makes it its loop's default executor).

One engine for the app's lifetime, so its background work (rolling summary, memory extraction)
survives between turns; quitting cancels it (`close()`), and what it left pending is taken up
when the user is next idle, in this run or the next.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from assistant.context import AppContext
from assistant.daemon_pool import in_thread
from assistant.errors import UserError
from assistant.services import Services
from tui.backend.convert import conversation_view, memory_item_view, source_view
from tui.views import ChatEvent, Failed, Finished, Replaced, Retrieved, Thinking, Token, Waiting

if TYPE_CHECKING:
    from assistant.chat import events as core
    from assistant.chat.engine import ChatEngine, TurnStream
    from assistant.chat.service import ChatService

IDLE_EXTRACT_TIMEOUT = 120.0  # seconds: an idle extraction gives up; the turns stay pending
CLOSE_PATIENCE = 0.1  # seconds quitting waits for the chat threads' last jobs


class CoreTurn:
    """One turn as the UI sees it: view events (async iteration) and `cancel()`."""

    def __init__(self, stream: TurnStream, ctx: AppContext, model: str, *,
                 notice: str = "") -> None:
        self._stream = stream
        self._ctx = ctx
        self._model = model
        self._notice = notice  # said with the first event (Retrieved's warnings)
        self._tokens = 0
        self._started = time.monotonic()

    def cancel(self) -> None:
        self._stream.cancel()

    def __aiter__(self) -> AsyncIterator[ChatEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[ChatEvent]:
        async for first in self._stream:
            # Tokens queued while the UI repainted come as one: at GPU speed the model outruns
            # the screen, and a backlog shown token by token would trail the model for minutes.
            for view in _merged([self._view(e) for e in (first, *self._stream.ready())]):
                yield view

    def _view(self, event: core.ChatEvent) -> ChatEvent:
        from assistant.chat import events as core
        from assistant.chat.answer_notes import answer_notes
        from assistant.sessions.turn import TRUNCATED_NOTE

        if isinstance(event, core.Retrieved):
            return Retrieved(
                tuple(source_view(s, self._ctx) for s in event.sources),
                tuple(memory_item_view(m) for m in event.memories),
                event.low_confidence,
                str(event.log_id) if event.log_id is not None else None,
                empty_index=event.empty_index,
                noted=memory_item_view(event.noted) if event.noted else None,
                warnings=(self._notice, *event.warnings) if self._notice else event.warnings,
                conversations=tuple(conversation_view(c) for c in event.conversations),
                time_range=_time_range(event),
            )
        if isinstance(event, core.Token):
            self._tokens += 1
            return Token(event.text)
        if isinstance(event, core.Waiting):
            return Waiting(event.describe())
        if isinstance(event, core.Thinking):
            return Thinking(event.text, event.seconds)
        if isinstance(event, core.AnswerReplaced):
            return Replaced(event.answer, event.thinking)
        if isinstance(event, core.ToolCalled):
            tool = event.tool
            first = tool.result.splitlines()[0][:200] if tool.result else ""
            return Token(f"\n\n> 🔧 `{tool.name}` {first}\n\n")
        if isinstance(event, core.Done):
            turn = event.turn
            total_ms = turn.timings.get("total_ms")
            return Finished(
                turn.model or self._model, self._tokens,
                total_ms / 1000 if total_ms else time.monotonic() - self._started,
                tuple(s.n for s in turn.sources if s.cited),
                interrupted=event.interrupted, session_id=turn.session_id,
                notice=TRUNCATED_NOTE if turn.truncated else "", text=turn.answer,
                conversations=tuple(conversation_view(c) for c in turn.conversations),
                truncated=turn.truncated, notes=answer_notes(turn),
                read=core.read_note(turn.timings),
            )
        return Failed(event.error.message, event.error.hint or "", event.partial,
                      event.turn.session_id if event.turn is not None else None)


def _time_range(event: core.Retrieved) -> str:
    """The dates a phrase of the question named, for the status line."""
    if event.time_range is None or not event.conversations_used:
        return ""
    note = "" if event.time_range_applied else " — nothing then, all dates searched"
    return event.time_range.describe() + note


def _merged(views: list[ChatEvent]) -> list[ChatEvent]:
    """Consecutive tokens (or reasoning deltas) as one; of consecutive waits, the latest."""
    out: list[ChatEvent] = []
    for view in views:
        last = out[-1] if out else None
        if isinstance(view, Token) and isinstance(last, Token):
            out[-1] = Token(last.text + view.text)
        elif isinstance(view, Thinking) and isinstance(last, Thinking):
            out[-1] = Thinking(last.text + view.text, view.seconds)
        elif isinstance(view, Waiting) and isinstance(last, Waiting):
            out[-1] = view
        else:
            out.append(view)
    return out


class ChatAdapter:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.ctx = services.ctx
        self._selecting = asyncio.Lock()  # a preload and a question pick the session in turn

    async def _open(self) -> ChatService:
        # Opening reads SQLite: off the UI's loop, once (no thread hop once it is open).
        opened = self.services.peek_chat()
        return opened if opened is not None else await in_thread(self.services.chat)

    async def warm_up(self) -> None:
        await (await self._open()).engine.warm_up()

    async def ask(self, session_id: str | None, text: str, *, model: str) -> CoreTurn:
        """Start a turn in `session_id` (None: a new session) with `model`."""
        engine = (await self._open()).engine
        # SQLite reads and writes (resume, set the session's model): off the UI's loop.
        async with self._selecting:
            notice = await in_thread(lambda: _select(engine, session_id, model))
        return CoreTurn(engine.send(text), self.ctx, model, notice=notice)

    async def preload(self, session_id: str | None, model: str) -> float:
        """Have Ollama load `model` now, with the num_ctx and keep_alive of the turns (so the
        first question pays no load and no reload), then read the session's opening in the
        background. Seconds the load took; raises what a turn would (Ollama down, model not
        pulled). Cancelling it closes the request, which makes Ollama drop the load."""
        engine = (await self._open()).engine
        async with self._selecting:
            try:
                await in_thread(lambda: _select(engine, session_id, model))
            except UserError:  # the session is gone (deleted elsewhere): the model still loads
                await in_thread(lambda: _select(engine, None, model))
        return await engine.preload()

    async def configure(self, changes: dict[str, Any]) -> None:
        """A setting edited on the settings screen, for the following turns."""
        engine = (await self._open()).engine
        engine.configure(**changes)

    def feedback(self, log_id: str, rating: int) -> None:
        """Rate an answer's search (blocking: a worker's), in the process's one log."""
        if not log_id.isdigit():
            raise UserError("this answer has no retrieval log entry")
        log = self.services.retrieval_log()
        entry = log.get(int(log_id))
        # Re-rating keeps the right sources the user already named.
        log.rate(int(log_id), rating, entry.correct_sources if entry else None)

    def mark_right_source(self, log_id: str, path: str) -> None:
        if not log_id.isdigit():
            raise UserError("these sources have no retrieval log entry")
        log = self.services.retrieval_log()
        entry = log.get(int(log_id))
        if entry is None:
            raise UserError(f"no retrieval log entry {log_id}")
        right = [*entry.correct_sources, *([] if path in entry.correct_sources else [path])]
        log.rate(int(log_id), -1, right)

    async def pending_extraction(self) -> int:
        engine = (await self._open()).engine
        return await in_thread(engine.pending_extraction)

    async def extract_pending(self) -> int:
        engine = (await self._open()).engine
        return await engine.extract_pending(timeout=IDLE_EXTRACT_TIMEOUT)

    async def close(self) -> None:
        """Quitting: cancel the engine's background work and close it. Memory extraction is
        not run here (it would hold the user's shell for a model call): the turns stay
        pending and `extract_pending` takes them at the next idle moment, in this run or the
        next. The stores are the Services' (closed by `CoreBackend.close` after this): a job
        still running on a chat thread then fails at its next store call and leaves the rest
        to the next run, as the process ending in the middle of it does."""
        service = self.services.take_chat()
        if service is not None:
            await service.aclose(patience=CLOSE_PATIENCE)


def _select(engine: ChatEngine, session_id: str | None, model: str) -> str:
    """Make `session_id` the engine's session; a notice when it is gone and a new session
    starts instead (deleted by another process: `brain sessions rm`, `forget-all`)."""
    from assistant.sessions.store import SessionNotFound

    current = engine.session  # (re-read: None once another process deleted it)
    notice = ""
    if session_id is None:
        if current is not None:
            engine.new_session()
    elif current is None or current.id != session_id:
        try:
            engine.resume(session_id)
        except SessionNotFound:
            engine.new_session()
            notice = ("That session was deleted (by another window or a `brain sessions` "
                      "command): this message starts a new session.")
    if model and model != engine.model:
        # Unchecked: a missing model fails the turn, which keeps the question.
        engine.set_model(model, check=False)
    return notice
