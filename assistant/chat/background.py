"""Background model work (memory extraction, the rolling summary) that never gets in the way.

Ollama answers one request at a time: a summary being written when the user asks a question
makes the question wait behind it — minutes on a CPU. So background jobs run only while the
user is idle (after an answer), and `yield_now()` (called as a question is sent) cancels the
running job at once: its HTTP request is closed, which makes Ollama drop it, and the job runs
again after the answer (its work is idempotent: pointers move only when a step succeeded).

`ModelCall` is the blocking `(messages, schema) -> str` function the memory layer calls from
its worker thread; it runs the request on the engine's event loop, so cancelling the job
cancels the request even though a thread is waiting on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from indexing.errors import log_failure

log = logging.getLogger(__name__)

Complete = Callable[[list[dict[str, str]], dict[str, Any]], Awaitable[str]]
# The engine's background request: (messages, JSON schema, reply token cap) → the reply.
BackgroundComplete = Callable[[list[dict[str, str]], dict[str, Any], int], Awaitable[str]]


class JobCancelled(Exception):
    """The background job was cancelled because the user sent a question."""


class ModelCall:
    """A thread-side `(messages, schema) -> str` backed by an async completion on `loop`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, complete: Complete) -> None:
        self._loop = loop
        self._complete = complete
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future[str]] = set()

    def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        if self._cancelled.is_set():
            raise JobCancelled("the user sent a question")
        future = asyncio.run_coroutine_threadsafe(
            _as_coroutine(self._complete(messages, schema)), self._loop
        )
        with self._lock:
            self._pending.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise JobCancelled("the user sent a question") from None
        finally:
            with self._lock:
                self._pending.discard(future)

    def cancel(self) -> None:
        """Fail this and every later call; close the request in flight."""
        self._cancelled.set()
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            future.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()


async def _as_coroutine(awaitable: Awaitable[str]) -> str:
    return await awaitable


class BackgroundJobs:
    """At most one background job at a time; cancelled when the user needs Ollama."""

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._calls: set[ModelCall] = set()
        self._disposable = False  # the running job only prepares for a next turn
        self.yielded = 0  # jobs cancelled for the user (observability, tests)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, job: Callable[[], Coroutine[Any, Any, None]], *,
              disposable: bool = False) -> bool:
        """Run `job()` now unless one is running; False if one was. A `disposable` job only
        prepares for a next turn (e.g. has Ollama read the conversation's opening): nothing is
        lost when it is dropped at exit."""
        if self.running:
            return False
        task = asyncio.get_running_loop().create_task(self._guard(job))
        self._task = task
        self._disposable = disposable
        return True

    def drop_disposable(self) -> None:
        """At exit: cancel the running job if it is disposable (no next turn is coming, and a
        prompt read on a CPU would hold the exit for seconds)."""
        if self._disposable and self.running:
            assert self._task is not None
            self._task.cancel()

    def model_call(self, complete: Complete) -> ModelCall:
        """A `ModelCall` cancelled with the current job."""
        call = ModelCall(asyncio.get_running_loop(), complete)
        self._calls.add(call)
        return call

    def release(self, call: ModelCall) -> None:
        """`call` is done with: forget it."""
        self._calls.discard(call)

    def yield_now(self) -> bool:
        """Cancel the running job (its request too); True if there was one."""
        calls, self._calls = list(self._calls), set()
        for call in calls:
            call.cancel()
        if self.running:
            assert self._task is not None
            self._task.cancel()
            self.yielded += 1
            return True
        return False

    async def wait(self, timeout: float | None = None) -> None:
        """Until the current job is over (or `timeout`)."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=timeout)

    async def _guard(self, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        try:
            await job()
        except asyncio.CancelledError:
            log.info("background job yielded to the user")
        except Exception as exc:  # background work must never break the chat
            log_failure(log, "background chat work failed (will retry later)", exc)

    async def aclose(self) -> None:
        self.yield_now()
        task = self._task
        if task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=5)
