"""`pytest --stress`: run the tests with every CPU core saturated by other processes.

A test that passes on an idle machine and fails under load waits for a proxy of the state it
asserts, or the code has a race (issue 13). `make test-stress` runs the whole suite this way,
three times in a row: one busy process per core, started before the first test and stopped
after the last, at normal priority like the other programs a user runs beside the app.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

# A loop that never sleeps; named so it is easy to recognise in `ps`.
BUSY = "while True: pass  # brain test --stress load"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--stress", action="store_true",
                     help="saturate every CPU core with busy processes while the tests run")


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 2


@pytest.fixture(scope="session", autouse=True)
def cpu_load(request: pytest.FixtureRequest) -> Iterator[int]:
    """The number of busy processes running beside the tests (0 without --stress)."""
    if not request.config.getoption("--stress"):
        yield 0
        return
    busy = [subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL)
            for _ in range(cores())]
    try:
        yield len(busy)
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait()


def fair_share(seconds: float) -> float:
    """`seconds`, the bound a user-facing time has on an idle machine, stretched by how many
    runnable processes share each core right now (the 1-minute load average per core; at
    least 1): with load 6 on 2 cores the program gets a third of a core, and every step of it
    takes three times as long. Timing bounds that stand for a product promise ("quit within a
    second") use it so they hold the promise on an idle machine and still mean something on a
    loaded one, without a margin that would hide a real regression when the machine is idle."""
    per_core = os.getloadavg()[0] / cores()
    return seconds * max(1.0, per_core)
