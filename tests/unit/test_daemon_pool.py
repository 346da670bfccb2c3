"""DaemonThreadPool: a ThreadPoolExecutor whose stuck jobs never hold up the process exit
(issue 15: Ctrl+Q took 13 s while a chat worker waited on a silent Ollama)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from assistant.daemon_pool import DaemonThreadPool
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_runs_jobs_and_reports_results_and_errors() -> None:
    pool = DaemonThreadPool(2)
    assert [f.result(5) for f in [pool.submit(pow, 2, n) for n in range(6)]] == [
        1, 2, 4, 8, 16, 32]
    failing = pool.submit(int, "x")
    with pytest.raises(ValueError):
        failing.result(5)
    pool.shutdown(wait=True)
    with pytest.raises(RuntimeError):
        pool.submit(pow, 2, 2)


def test_never_more_threads_than_asked_and_idle_threads_are_reused() -> None:
    pool = DaemonThreadPool(2, thread_name_prefix="t")
    gate = threading.Event()
    running = Counter()

    def blocked_job() -> bool:
        running.add()
        return gate.wait(5)

    blocked = [pool.submit(blocked_job) for _ in range(5)]
    wait_until(lambda: running.value == 2, what="two jobs running at once")
    assert len(pool._workers) == 2
    gate.set()
    assert all(f.result(5) for f in blocked)
    for _ in range(10):
        pool.submit(time.sleep, 0).result(5)
    assert len(pool._workers) == 2
    assert all(w.daemon for w in pool._workers)
    pool.shutdown()


def test_a_job_submitted_while_the_idle_worker_takes_another_gets_its_own_thread() -> None:
    """The one idle worker was counted as free for every job submitted before it woke up: two
    jobs submitted back to back ran one after the other on a pool of two threads."""
    pool = DaemonThreadPool(2)
    assert pool.submit(pow, 2, 2).result(5) == 4
    wait_until(lambda: pool._idle == 1, what="the first worker to wait for a job")
    gate = threading.Event()
    running = Counter()

    def blocked_job() -> bool:
        running.add()
        return gate.wait(5)

    first, second = pool.submit(blocked_job), pool.submit(blocked_job)
    wait_until(lambda: running.value == 2, what="both jobs running at once")
    assert len(pool._workers) == 2
    gate.set()
    assert first.result(5) and second.result(5)
    pool.shutdown()


class Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


def test_shutdown_can_cancel_what_has_not_started() -> None:
    pool = DaemonThreadPool(1)
    gate = threading.Event()
    started = threading.Event()

    def first() -> bool:
        started.set()
        return gate.wait(5)

    running = pool.submit(first)
    assert started.wait(5)  # running, no longer queued
    queued = [pool.submit(time.sleep, 0) for _ in range(3)]
    pool.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert running.result(5) is True
    assert all(f.cancelled() for f in queued)


def test_shutdown_never_joins_a_stuck_job() -> None:
    """asyncio.run() ends by shutting the default executor down with wait=True: the app's exit
    waited for a call stuck on a silent Ollama until this returned at once."""
    pool = DaemonThreadPool(2)
    gate = threading.Event()
    stuck = pool.submit(gate.wait, 30)
    started = time.monotonic()
    pool.shutdown(wait=True)
    assert time.monotonic() - started < 1 and not stuck.done()
    gate.set()
    assert stuck.result(5) is True


def test_asyncio_run_returns_while_a_default_executor_job_is_stuck() -> None:
    gate = threading.Event()

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(DaemonThreadPool(2))
        asyncio.get_running_loop().run_in_executor(None, gate.wait, 30)

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 5
    gate.set()


def test_asyncio_accepts_it_as_the_default_executor() -> None:
    async def main() -> int:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(DaemonThreadPool(2))
        return await asyncio.to_thread(sum, [1, 2, 3])

    assert asyncio.run(main()) == 6


STUCK = textwrap.dedent("""
    import asyncio, socket, sys, threading
    from assistant.daemon_pool import DaemonThreadPool

    server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(4)
    port = server.getsockname()[1]

    def wait_for_silent_server():
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"GET /api/show HTTP/1.1\\r\\n\\r\\n")
            s.recv(1)  # never answered

    pool = DaemonThreadPool(1)
    pool.submit(wait_for_silent_server)
    loop = asyncio.new_event_loop()
    loop.set_default_executor(DaemonThreadPool(2))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(asyncio.to_thread(wait_for_silent_server), loop)
    print("stuck", flush=True)
""")


def test_a_job_stuck_in_a_network_call_does_not_delay_exit() -> None:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", STUCK], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stuck"
    # With ThreadPoolExecutor the interpreter would wait for the recv forever (timeout=60).
    assert time.monotonic() - started < 30


def test_a_stuck_job_never_starves_the_next_ones() -> None:
    """Workers are counted idle only while they wait: a long job must not make the pool think
    a worker is free (the next jobs would queue behind it)."""
    pool = DaemonThreadPool(3)
    for _ in range(5):
        pool.submit(time.sleep, 0).result(5)
    stuck = threading.Event()
    pool.submit(stuck.wait, 30)
    time.sleep(0.05)
    assert pool.submit(pow, 2, 10).result(5) == 1024
    stuck.set()
    pool.shutdown()
