"""A thread pool whose threads never hold up the process when it exits.

`concurrent.futures.ThreadPoolExecutor` joins every worker thread at interpreter exit. A worker
waiting on a network call (an Ollama that accepted the connection and then went silent, a
60-s read timeout) then keeps the user's terminal hostage after they quit: Ctrl+Q took
seconds, up to the request timeout. This pool runs the same jobs on daemon threads that exit
with the process. Whatever such a job was writing is protected the way a killed process is:
SQLite transactions roll back, the index converges on the next sync.

It subclasses ThreadPoolExecutor only so asyncio accepts it as a loop's default executor
(`loop.set_default_executor` insists); none of the parent's machinery is used. The TUI makes
it its loop's default executor; `in_thread` runs one call on a daemon thread of its own (the
TUI's backend calls, some of which block until quit: the folder watcher).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from indexing.threads import start_daemon

T = TypeVar("T")
_STOP = object()
_ids = itertools.count(1)


class DaemonThreadPool(ThreadPoolExecutor):
    def __init__(self, max_workers: int = 4, thread_name_prefix: str = "brain-worker") -> None:
        super().__init__(max_workers=1)  # creates no thread; keeps isinstance checks happy
        self._limit = max(1, max_workers)
        self._prefix = thread_name_prefix
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = 0  # workers waiting for a job, or about to
        self._queued = 0  # jobs submitted that no worker has taken yet
        self._guard = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._guard:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._jobs.put((future, fn, args, kwargs))
            self._queued += 1
            # A worker starts when the queued jobs outnumber the workers free to take them.
            # Comparing `_idle` with 0 alone counted a worker that was about to take an
            # earlier job as free for this one: two jobs submitted back to back to a 2-thread
            # pool ran one after the other (test_daemon_pool).
            if self._queued > self._idle and len(self._workers) < self._limit:
                worker = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._prefix}-{next(_ids)}")
                self._workers.append(worker)
                worker.start()
        return future

    def _work(self) -> None:
        while True:
            with self._guard:
                self._idle += 1
            item = self._jobs.get()
            with self._guard:
                self._idle -= 1
                if item is not _STOP:
                    self._queued -= 1
            if item is _STOP:
                return
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                del future, fn, args, kwargs, item  # drop references while idle

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._guard:
            self._closed = True
            workers = list(self._workers)
        if cancel_futures:
            with contextlib.suppress(queue.Empty):
                while True:
                    item = self._jobs.get_nowait()
                    if item is _STOP:
                        continue
                    item[0].cancel()
        for _ in workers:
            self._jobs.put(_STOP)
        # `wait` is accepted and ignored: joining a worker stuck in a network call is exactly
        # what this pool exists to avoid. asyncio.run() shuts the loop's default executor down
        # with wait=True as the app exits (Ctrl+Q waited for a silent Ollama's /api/show).
        del wait


async def in_thread(fn: Callable[[], T]) -> T:
    """`await` a blocking call run on its own daemon thread (cancelling the await abandons it:
    its result, or its error, goes nowhere)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # handed to the awaiting task, which decides
            error = exc
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (app quit)
                loop.call_soon_threadsafe(settle, lambda: done.set_exception(error))
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, lambda: done.set_result(result))

    start_daemon("brain-call", run)
    return await done
