"""`timed`: the one way a stage's duration goes into a timing record (milliseconds), adding up
over a stage timed twice and recorded even when the stage raises."""

from __future__ import annotations

import time

import pytest

from indexing.timing import timed


def test_a_stage_timed_twice_adds_up_in_milliseconds() -> None:
    timings = {"fuse": 0.0}
    with timed(timings, "fuse"):
        time.sleep(0.02)
    first = timings["fuse"]
    with timed(timings, "fuse"):
        time.sleep(0.02)
    assert first >= 20.0  # milliseconds, not seconds
    assert timings["fuse"] >= first + 20.0


def test_a_stage_that_raises_still_records_its_time() -> None:
    timings: dict[str, float] = {}
    with pytest.raises(RuntimeError), timed(timings, "dense"):
        time.sleep(0.01)
        raise RuntimeError("vector store down")
    assert timings["dense"] >= 10.0
