"""The one way the UI runs backend work: off the event loop, failures shown, never raised.

Controllers and screens start async workers (Textual's `run_worker`) on the screen that shows
the result; inside, `attempt(app, "Listing folders", backend_call)` runs the blocking call on a
daemon thread (assistant/daemon_pool.py: quitting never waits for one stuck in a network call) and
returns its result, or None after notifying the user: a `HintedError` as its message and hint,
anything else as a bug report line. Nothing the worker touches afterwards needs a try/except.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from textual.app import App
from textual.dom import DOMNode

from assistant.daemon_pool import in_thread
from assistant.errors import HintedError

log = logging.getLogger(__name__)

T = TypeVar("T")


def describe(exc: BaseException) -> tuple[str, str]:
    """(message, hint) to show for a failure."""
    if isinstance(exc, HintedError):
        return exc.message, exc.hint or ""
    return f"{type(exc).__name__}: {exc}", ""


def report(app: App[object], action: str, exc: BaseException) -> None:
    """Tell the user that `action` failed and what to do about it."""
    message, hint = describe(exc)
    if not isinstance(exc, HintedError):
        log.error("%s failed", action, exc_info=exc)
    app.notify(f"{action}: {message}" + (f"\n{hint}" if hint else ""), severity="error",
               timeout=10)


async def attempt(app: App[object], action: str, call: Callable[[], T]) -> T | None:
    """Run the blocking `call` on a daemon thread; its result, or None once the failure was
    reported."""
    try:
        return await in_thread(call)
    except Exception as exc:  # the UI stays up; the notification says what broke
        report(app, action, exc)
        return None


async def succeeded(app: App[object], action: str, call: Callable[[], object]) -> bool:
    """`attempt` for a call whose result does not matter: True when it worked."""
    try:
        await in_thread(call)
    except Exception as exc:
        report(app, action, exc)
        return False
    return True


def on_loop(app: App[object], callback: Callable[[T], None]) -> Callable[[T], None]:
    """`callback` made safe to call from a worker thread (e.g. sync progress): it runs on the
    UI's loop; calls arriving after the app closed are dropped."""
    def post(value: T) -> None:
        if app.is_running:
            app.call_later(callback, value)

    return post


class Refresh:
    """A refresh asked for often (counts, polls): one run at a time, and when asked again while
    it runs, once more afterwards. Never cancelled halfway (an exclusive worker restarted by a
    fast timer could starve and never finish)."""

    def __init__(self, node: DOMNode, group: str, run: Callable[[], Awaitable[None]]) -> None:
        self._node = node
        self._group = group
        self._run = run
        self._running = False
        self._again = False

    def __call__(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        self._node.run_worker(self._loop(), group=self._group)

    async def _loop(self) -> None:
        try:
            while True:
                self._again = False
                await self._run()
                if not self._again:
                    return
        finally:
            self._running = False
