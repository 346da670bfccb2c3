"""The async chat engine for synchronous callers (the TUI's worker threads, scripts).

The engine and everything it owns live on one event loop in a dedicated thread; callers get
plain iterators and a `threading.Event` to cancel, so they never touch asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from assistant.chat.engine import ChatEngine, TurnStream
from assistant.chat.events import ChatEvent, Done, Failed
from assistant.daemon_pool import DaemonThreadPool

T = TypeVar("T")
_END = object()
POLL_SECONDS = 0.05  # how often a waiting caller checks its cancel event


class BlockingChat:
    """Wraps a ChatEngine built by `make_engine` (called on the loop thread)."""

    def __init__(
        self,
        make_engine: Callable[[], ChatEngine],
        *,
        on_close: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        # to_thread / run_in_executor(None) jobs (model facts, blocking engine calls) wait on
        # Ollama: on daemon threads they cannot hold the process after the app quits.
        self._loop.set_default_executor(DaemonThreadPool(8, thread_name_prefix="brain-chat"))
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="brain-chat-loop", daemon=True
        )
        self._thread.start()
        self._on_close = on_close
        self._closed = False
        self.engine: ChatEngine = self.run(self._make(make_engine))

    @staticmethod
    async def _make(make_engine: Callable[[], ChatEngine]) -> ChatEngine:
        return make_engine()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the engine's loop and wait for its result."""
        if self._closed:
            coro.close()
            raise RuntimeError("the chat is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def call(self, fn: Callable[[ChatEngine], T]) -> T:
        """Run a (blocking) engine method on a worker thread of the loop, e.g.
        `chat.call(lambda e: e.set_model("llama3.2"))`."""

        async def go() -> T:
            return await asyncio.to_thread(fn, self.engine)

        return self.run(go())

    def warm_up(self) -> None:
        """Load models and open stores now rather than at the first question (blocking)."""
        self.run(self.engine.warm_up())

    def ask(
        self,
        message: str,
        *,
        session_id: str | None = None,
        model: str | None = None,
        cancel: threading.Event | None = None,
        use_knowledge: bool = True,
        use_memory: bool = True,
        retry: bool = False,
    ) -> Iterator[ChatEvent]:
        """Events of one turn. `session_id=None` continues the engine's current session (a new
        one after `new_session()`); setting `cancel` interrupts the answer."""
        events: queue.Queue[Any] = queue.Queue()

        async def start() -> TurnStream:
            engine = self.engine
            current = engine.session
            if session_id is not None and (current is None or current.id != session_id):
                engine.resume(session_id)
            if model and model != engine.model:
                engine.set_model(model, check=False)
            options = {"use_knowledge": use_knowledge, "use_memory": use_memory}
            stream = engine.retry(**options) if retry else engine.send(message, **options)

            async def pump() -> None:
                try:
                    async for event in stream:
                        events.put(event)
                finally:
                    events.put(_END)

            self._loop.create_task(pump())
            return stream

        stream = self.run(start())
        cancelled = False
        while True:
            try:
                event = events.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if cancel is not None and cancel.is_set() and not cancelled:
                    cancelled = True
                    self._loop.call_soon_threadsafe(stream.cancel)
                continue
            if event is _END:
                return
            yield event
            if isinstance(event, Done | Failed):
                continue  # the stream ends right after; drain to _END

    def close(self, timeout: float = 10.0) -> None:
        """Finish background work (the rolling summary), close the engine, stop the loop."""
        if self._closed:
            return

        async def shutdown() -> None:
            # Memory extraction of what this session has not been through yet; on timeout
            # the turns stay in the session and extraction can run next time.
            with contextlib.suppress(TimeoutError):
                await self.engine.finish(timeout=timeout)
            if self._on_close is not None:
                await self._on_close()  # closes the engine with the stores it opened
            else:
                await self.engine.aclose()

        try:
            self.run(shutdown(), timeout=timeout + 5)
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
