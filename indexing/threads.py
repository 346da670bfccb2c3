"""`start_daemon(name, fn)`: the one way a background thread starts.

Every thread of ours is a daemon (quitting never waits for a model load or a network call; what
it was writing is protected the way a killed process is: SQLite rolls back, the index
converges) and named (a traceback, `py-spy dump` and the log say whose it is). An exception
escaping `fn` is logged here with its traceback, so a crash is in the log file whether or not
the process installed the log's thread hook (`brain mcp`, a test, a library user). The daemon
pool (assistant/daemon_pool.py) keeps its own workers: they hand errors to their futures.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def start_daemon(name: str, fn: Callable[[], object]) -> threading.Thread:
    """Run `fn()` on a new daemon thread called `name`; the started thread."""

    def run() -> None:
        try:
            fn()
        except Exception:  # the thread ends either way: its traceback goes to the log
            log.exception("thread %s failed", name)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
