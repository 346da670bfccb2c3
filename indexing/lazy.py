"""`Lazy`: a resource opened on first use, once, behind a lock — the one way to do it.

Stores, models and connections are expensive to open (the embedding model takes seconds, Chroma
and SQLite open files) and are needed by some commands only, so each is opened the first time a
caller needs it. Several threads may ask at once (the TUI's workers, the chat engine's pools):
the lock makes them share one instance. A failed open raises to that caller and is tried again
by the next; `close()` closes what was opened (if anything) and lets a later `get()` reopen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    def __init__(
        self, open: Callable[[], T], *, close: Callable[[T], object] | None = None
    ) -> None:
        self._open = open
        self._close = close
        self._value: T | None = None
        self._lock = threading.RLock()  # re-entrant: an opener may use another Lazy's value

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._open()
            return self._value

    def peek(self) -> T | None:
        """The value if it was opened, without opening it."""
        return self._value

    def close(self) -> None:
        """Close the value if it was opened; the next `get()` opens a new one."""
        with self._lock:
            value, self._value = self._value, None
        if value is not None and self._close is not None:
            self._close(value)
