"""The one way the UI runs backend work: off the event loop, failures shown, never raised.

Controllers and screens start async workers (Textual's `run_worker`) on the screen that shows
the result; inside, `attempt(app, "Listing folders", backend_call)` runs the blocking call on a
daemon thread (assistant/daemon_pool.py: quitting never waits for one stuck in a network call) and
returns its result, or None after notifying the user: a `HintedError` as its message and hint,
anything else as a bug report line, its traceback in the log file (logged here, once).
`attempt_async` does the same for an awaitable backend call (the chat's). A worker that shows a
failure its own way (in the answer, the status bar, a dialog) passes `shown=`; a poll passes
`repeats=` so the same failure at every tick is said and logged once. Nothing the worker
touches afterwards needs a try/except.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from textual.app import App
from textual.dom import DOMNode
from textual.notifications import SeverityLevel

from assistant.daemon_pool import in_thread
from assistant.errors import HintedError

log = logging.getLogger(__name__)

T = TypeVar("T")


def describe(exc: BaseException) -> tuple[str, str]:
    """(message, hint) to show for a failure."""
    if isinstance(exc, HintedError):
        return exc.message, exc.hint or ""
    return f"{type(exc).__name__}: {exc}", ""


@dataclass(frozen=True)
class Failure:
    """What failed, as the user is told: `action` ("Listing folders"), its error and the
    error's message and hint."""

    action: str
    error: Exception
    message: str
    hint: str

    @property
    def line(self) -> str:
        """The message with its hint in brackets, on one line (a status bar, a summary)."""
        return self.message + (f" ({self.hint})" if self.hint else "")


Shown = Callable[[Failure], Awaitable[None] | None]


def failure(action: str, exc: Exception) -> Failure:
    """`exc` as a `Failure`; a bug (anything but a `HintedError`) leaves its traceback in the
    log — the only place a worker's failure is logged."""
    if not isinstance(exc, HintedError):
        log.error("%s failed", action, exc_info=exc)
    message, hint = describe(exc)
    return Failure(action, exc, message, hint)


class Notifies(Protocol):
    """What showing a failure needs of the app: `App.notify` (a test passes a recorder)."""

    def notify(self, message: str, *, severity: SeverityLevel = ...,
               timeout: float | None = ...) -> None: ...


def notify(app: Notifies, failed: Failure) -> None:
    """The default way a failure is shown: an error notification with its hint."""
    app.notify(f"{failed.action}: {failed.message}" + (f"\n{failed.hint}" if failed.hint else ""),
               severity="error", timeout=10)


def quietly(failed: Failure) -> None:
    """`shown=` for background work retried later: the log only (a bug's traceback is there
    already)."""
    if isinstance(failed.error, HintedError):
        log.info("%s failed: %s", failed.action, failed.line)


class Repeats:
    """One per poll: the failure it had last time, so the same failure at every tick is shown
    and logged once; a success forgets it."""

    def __init__(self) -> None:
        self._last: tuple[type[BaseException], str, str] | None = None

    def again(self, exc: Exception) -> bool:
        """True when `exc` is the failure already reported; remembers it otherwise."""
        key = (type(exc), *describe(exc))
        if key == self._last:
            return True
        self._last = key
        return False

    def forget(self) -> None:
        self._last = None


def outcome(action: str, call: Callable[[], T]) -> T | Failure:
    """The blocking form, for a thread's own body (not a worker): `call()`'s result or its
    `Failure`."""
    try:
        return call()
    except Exception as exc:  # the caller shows the Failure; a bug's traceback is logged
        return failure(action, exc)


async def attempt_async(app: Notifies, action: str, run: Callable[[], Awaitable[T]], *,
                        shown: Shown | None = None, repeats: Repeats | None = None) -> T | None:
    """Await `run()`; its result, or None once the failure was shown (`shown`, else a
    notification). Cancellation is not a failure: it propagates."""
    try:
        result = await run()
    except Exception as exc:  # the UI stays up; the notification says what broke
        if repeats is not None and repeats.again(exc):
            return None
        failed = failure(action, exc)
        if shown is None:
            notify(app, failed)
        else:
            pending = shown(failed)
            if inspect.isawaitable(pending):  # a widget update (e.g. the answer's Failed)
                await pending
        return None
    if repeats is not None:
        repeats.forget()
    return result


async def attempt(app: Notifies, action: str, call: Callable[[], T], *,
                  shown: Shown | None = None, repeats: Repeats | None = None) -> T | None:
    """Run the blocking `call` on a daemon thread; its result, or None once the failure was
    shown."""
    return await attempt_async(app, action, lambda: in_thread(call), shown=shown,
                               repeats=repeats)


async def succeeded(app: Notifies, action: str, call: Callable[[], object]) -> bool:
    """`attempt` for a call whose result does not matter: True when it worked."""
    def run() -> bool:
        call()
        return True

    return await attempt(app, action, run) is True


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
