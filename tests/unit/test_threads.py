"""`start_daemon`: every background thread is a named daemon, and one that raises leaves its
traceback in the log file, even in a process without the log's thread hook (`brain mcp`'s
threads, a library user): the helper logs it, not the hook."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from assistant.logfile import log_file
from assistant.paths import resolve_paths
from indexing.threads import start_daemon

ROOT = Path(__file__).resolve().parents[2]

CRASH = """
import sys, threading
from assistant.logfile import install_log
from assistant.paths import resolve_paths
from indexing.threads import start_daemon

install_log(resolve_paths(sys.argv[1]), "test")
threading.excepthook = threading.__excepthook__  # without the hook: only the helper can log

def crash():
    raise RuntimeError("the thread's own failure")

start_daemon("test-crash", crash).join(60)
"""


def test_a_named_daemon_runs_the_function() -> None:
    ran = threading.Event()
    thread = start_daemon("test-worker", ran.set)
    thread.join(60)
    assert ran.is_set() and thread.daemon and thread.name == "test-worker"


def test_a_thread_that_raises_leaves_its_traceback_in_the_log_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run([sys.executable, "-c", CRASH, str(home)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = log_file(resolve_paths(str(home))).read_text()
    assert "thread test-crash failed" in text
    assert "Traceback (most recent call last)" in text
    assert "RuntimeError: the thread's own failure" in text
