"""`pytest --stress`: run the tests with every CPU core saturated by other processes.

A test that passes on an idle machine and fails under load waits for a proxy of the state it
asserts, or the code has a race (issue 13). `make test-stress` runs the whole suite this way,
three times in a row: one busy process per core, started before the first test and stopped
after the last, at normal priority like the other programs a user runs beside the app.

With pytest-xdist the load belongs to the run, not to a worker: only the controller (or the one
process of a run without workers) starts it, so two workers still mean one busy process per
core, not two; the workers are told how many are running.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

# A loop that never sleeps; named so it is easy to recognise in `ps`. It ends by itself once
# the run that started it is gone (its parent changed: a SIGKILLed pytest leaves no spinner).
BUSY = ("import os\nparent = os.getppid()\n"
        "while os.getppid() == parent: pass  # brain test --stress load")
_BUSY = pytest.StashKey[list[subprocess.Popen[bytes]]]()
_WORKER_COUNT = "stress_busy_processes"  # the key in an xdist worker's workerinput


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--stress", action="store_true",
                     help="saturate every CPU core with busy processes while the tests run")


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 2


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("--stress") or _is_worker(config):
        return
    config.stash[_BUSY] = [
        subprocess.Popen([sys.executable, "-c", BUSY], stdin=subprocess.DEVNULL)
        for _ in range(cores())]


def pytest_sessionfinish(session: pytest.Session) -> None:
    busy = session.config.stash.get(_BUSY, [])
    for process in busy:
        process.kill()
    for process in busy:
        process.wait()
    busy.clear()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist, in the controller, for each worker it starts: how many busy processes run."""
    node.workerinput[_WORKER_COUNT] = len(node.config.stash.get(_BUSY, []))


@pytest.fixture(scope="session", autouse=True)
def cpu_load(request: pytest.FixtureRequest) -> int:
    """The number of busy processes running beside the tests (0 without --stress)."""
    config = request.config
    if _is_worker(config):
        workerinput: dict[str, Any] = vars(config)["workerinput"]  # set by xdist on workers
        return int(workerinput.get(_WORKER_COUNT, 0))
    return len(config.stash.get(_BUSY, []))


def fair_share(seconds: float) -> float:
    """`seconds`, the bound a user-facing time has on an idle machine, stretched by how many
    runnable processes share each core right now (the 1-minute load average per core; at
    least 1): with load 6 on 2 cores the program gets a third of a core, and every step of it
    takes three times as long. Timing bounds that stand for a product promise ("quit within a
    second") use it so they hold the promise on an idle machine and still mean something on a
    loaded one, without a margin that would hide a real regression when the machine is idle."""
    per_core = os.getloadavg()[0] / cores()
    return seconds * max(1.0, per_core)
