"""Wait for the exact state a test asserts, never for a guessed time (issue 23: a test that
passes idle and fails under load is a bug). One poll-with-a-deadline for every test: the
blocking `wait_until` for threads and child processes, `wait_until_async` for code on an event
loop (the TUI's pilot passes its own `step`, so the app runs between polls).

The condition is checked before the deadline is: a state reached while the machine was too
busy to poll still counts, and a failure names what was awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

# Generous on purpose: a passing test never waits for it, and a loaded machine (every core
# busy under `--stress`) must not turn a slow success into a failure.
TIMEOUT = 15.0


def _timed_out(timeout: float, what: str, detail: str) -> AssertionError:
    return AssertionError(f"timed out after {timeout:g} s waiting for {what or 'the condition'}"
                          + (f"; {detail}" if detail else ""))


def wait_until(
    condition: Callable[[], object],
    timeout: float = TIMEOUT,
    what: str = "",
    *,
    interval: float = 0.02,
) -> None:
    """Block until `condition()` is true; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise _timed_out(timeout, what, "")
        time.sleep(interval)


async def wait_until_async(
    condition: Callable[[], object],
    timeout: float = TIMEOUT,
    what: str = "",
    *,
    step: Callable[[], Awaitable[object]] | None = None,
    detail: Callable[[], str] | None = None,
) -> None:
    """Let the loop run until `condition()` is true; fail naming `what` (and `detail()`, the
    state worth seeing in the failure) after `timeout` s. `step` is one pause between polls
    (default: 10 ms of `asyncio.sleep`)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise _timed_out(timeout, what, detail() if detail is not None else "")
        await (step() if step is not None else asyncio.sleep(0.01))
