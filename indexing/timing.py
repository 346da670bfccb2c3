"""`timed(timings, stage)`: the one way a stage's duration goes into a timing record.

Retrieval and the chat turn report where their time went as a dict of milliseconds per stage
(`RetrievalResult.timings`, the turn's `timings`), shown by `--timings`, logged and benchmarked.
A block run twice for one stage (fusing, then choosing what is shown) adds up; the duration is
recorded even when the block raises, so a stage that failed halfway still shows its cost.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager


@contextmanager
def timed(timings: MutableMapping[str, float], stage: str) -> Iterator[None]:
    """Add the block's wall-clock time, in milliseconds, to `timings[stage]`."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + (time.perf_counter() - start) * 1000
