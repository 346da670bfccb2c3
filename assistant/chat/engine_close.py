"""Closing a chat engine's threads: each source's close, or a mere barrier, queued behind the
job running on its thread, then the threads shut down.

The stores a `Services`-built chat reads are its owner's, closed by `Services.close()` after
the engine: the barriers make that close come after whatever the engine's threads were doing
(an extraction's last write, a recall), as a source's own close always did.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from assistant.chat.turn_context import EnginePools
from assistant.daemon_pool import DaemonThreadPool

log = logging.getLogger(__name__)


def _nothing() -> None:
    """A barrier: done once the job before it on the thread is."""


async def close_threads(pools: EnginePools, sources: dict[str, object],
                        patience: float | None) -> None:
    """Queue on each of `pools` the close of its source in `sources` (by pool name; a source
    without `close` gets a barrier), shut the threads down and wait at most `patience` seconds
    (None: until done) for what was queued. A close left behind runs when its thread's job
    ends, or never if the process ends first."""
    loop = asyncio.get_running_loop()
    queued: list[tuple[DaemonThreadPool, Callable[[], object]]] = []
    for name in ("knowledge", "memory", "conversations", "sessions"):
        close = getattr(sources.get(name), "close", None)
        queued.append((getattr(pools, name), close if callable(close) else _nothing))
    closing = [loop.run_in_executor(pool, close) for pool, close in queued]
    for pool, _close in queued:
        pool.shutdown(wait=False)  # the closes queued above still run
    await asyncio.wait(closing, timeout=patience)
    for task in closing:
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("closing the chat's stores failed", exc_info=task.exception())
