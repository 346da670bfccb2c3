"""`IdleRelease`: give a loaded model's memory back once it has gone unused for a while.

The embedding model and its ONNX (or torch) working memory are a few hundred MB. A one-shot
command exits and frees them; the TUI, `brain index --watch` and `brain mcp` would hold them
for hours between two searches. Each use calls `used()`; a daemon thread, alive only while
something is loaded, calls `release` once `idle_seconds` pass with no use. The next use loads
the model again (the loaders are `Lazy`), so a release costs one reload, never a failure.

`check()` is the whole decision and reads the injected clock, so tests drive it with a fake
clock; the thread only decides when to call it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
import time
from collections.abc import Callable

from indexing.threads import start_daemon

log = logging.getLogger(__name__)


class IdleRelease:
    def __init__(
        self,
        release: Callable[[], bool],
        idle_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        background: bool | None = None,
    ) -> None:
        """`release()` frees the model and says whether it did (False: it was in use, so the
        next `used()` arms the timer again). `idle_seconds` <= 0: never release.
        `background`: run the thread; by default only on the real clock, since the thread
        waits in real time (with a fake clock the caller drives `check()`)."""
        self._release = release
        self._idle = float(idle_seconds)
        self._clock = clock
        self._background = clock is time.monotonic if background is None else background
        self._wake = threading.Condition()
        self._last: float | None = None  # the last use since the last release; None: nothing held
        self._thread: threading.Thread | None = None
        self.releases = 0

    @property
    def enabled(self) -> bool:
        return self._idle > 0

    def used(self) -> None:
        """The model was just used (and so is loaded): restart the idle countdown."""
        if not self.enabled:
            return
        with self._wake:
            self._last = self._clock()
            if self._background and self._thread is None:
                self._thread = start_daemon("embedder-idle-release", self._run)

    def check(self) -> float | None:
        """Release if idle long enough. Returns the seconds until the next check is due, or
        None when nothing is held (the thread then ends; the next use starts another)."""
        with self._wake:
            if self._last is None:
                return None
            remaining = self._last + self._idle - self._clock()
            if remaining > 0:
                return remaining
            self._last = None
        # Outside our lock: `release` takes the model's lock, and a user of the model calls
        # `used()` while holding it.
        if self._release():
            self.releases += 1
            trim_heap()
            log.info("embedding model released after %.0f s idle", self._idle)
        return None

    def _run(self) -> None:
        while True:
            with self._wake:
                delay = self._peek_delay()
                if delay is None:
                    self._thread = None
                    return
                if delay > 0:
                    self._wake.wait(delay)
                    continue
            self.check()

    def _peek_delay(self) -> float | None:
        if self._last is None:
            return None
        return self._last + self._idle - self._clock()


def trim_heap() -> None:
    """Hand freed heap pages back to the OS. glibc keeps what a freed ONNX session or tensor
    used in its arenas, so without this the process's RSS would barely move (Linux/glibc only;
    elsewhere the allocator's own policy applies)."""
    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)
