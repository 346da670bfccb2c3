"""One turn's events as an async iterator (`ChatEngine.send` returns it).

`cancel()` stops the generation at once — the HTTP stream is closed, which makes Ollama stop,
even while it is still loading the model or reading the prompt — and the turn ends with `Done`
marked interrupted, the partial answer stored. A turn cancelled before it could record itself
(or crashed) is recorded by `on_abort`, which stores off the event loop: the stream ends (and
`done` turns true) only once that record is written, so the next turn is stored after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from assistant.chat.events import ChatEvent, Done, Emit, Failed
from assistant.llm import errors

log = logging.getLogger(__name__)

Run = Callable[[Emit], Coroutine[Any, Any, None]]


class TurnStream:
    """Async iterator over one turn's events; `cancel()` interrupts the answer."""

    def __init__(self, run: Run, on_abort: Run, saved_in: str | Path | None = None) -> None:
        self._saved_in = saved_in  # the sessions database, named when it cannot be written
        self._queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()  # None: the end
        self._final: Done | Failed | None = None
        self._ended = False
        self._abort: asyncio.Task[None] | None = None
        self._task = asyncio.get_running_loop().create_task(run(self._emit))
        self._task.add_done_callback(lambda task: self._finish(task, on_abort))

    def _emit(self, event: ChatEvent) -> None:
        if isinstance(event, Done | Failed):
            self._final = event
        self._queue.put_nowait(event)

    def _finish(self, task: asyncio.Task[None], on_abort: Run) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("chat turn crashed", exc_info=task.exception())
        if self._final is not None:
            self._end()
            return
        # Cancelled before the turn could record itself (or crashed): record it now.
        self._abort = asyncio.get_running_loop().create_task(self._record(on_abort))

    async def _record(self, on_abort: Run) -> None:
        try:
            await on_abort(self._emit)
        except Exception as exc:  # e.g. the sessions database is not writable
            log.exception("could not record the turn")
            self._emit(Failed(errors.not_saved(exc, self._saved_in), "", None))
        finally:
            self._end()

    def _end(self) -> None:
        self._ended = True
        self._queue.put_nowait(None)

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> ChatEvent:
        event = await self._queue.get()
        if event is None:
            self._queue.put_nowait(None)  # later readers end too
            raise StopAsyncIteration
        return event

    def ready(self) -> list[ChatEvent]:
        """The events already queued, without waiting: a reader slower than the model (a UI
        repainting) takes a whole backlog of tokens in one go instead of one per repaint."""
        events: list[ChatEvent] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event is None:
                self._queue.put_nowait(None)
                break
            events.append(event)
        return events

    def cancel(self) -> None:
        """Stop generating now; the stream then ends with `Done` (interrupted)."""
        self._task.cancel()

    @property
    def done(self) -> bool:
        """The turn is over and recorded."""
        return self._task.done() and self._ended

    async def result(self) -> Done | Failed:
        """Consume the remaining events; the final one."""
        async for _ in self:
            pass
        assert self._final is not None
        return self._final

    async def aclose(self) -> None:
        self.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if self._abort is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._abort
