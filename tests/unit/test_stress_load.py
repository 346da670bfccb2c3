"""`--stress` under pytest-xdist: one busy process per core for the whole run, started by the
controller, not one set per worker (two workers on two cores would otherwise run four
spinners, and each worker's would stop with that worker, before the last test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.stress import cores

ROOT = Path(__file__).resolve().parents[2]

# Each inner test records the busy processes whose parent is the run's controller (a worker's
# parent; the test process itself without workers) and those whose parent is its own process.
INNER = '''
import json, os, pathlib

def _busy_children(parent):
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"brain test --stress load" in cmdline:
            found.append(int(entry.name))
    return sorted(found)

def _record(name, cpu_load):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    controller = os.getppid() if worker else os.getpid()
    out = pathlib.Path(os.environ["STRESS_OUT"]) / name
    out.write_text(json.dumps({"worker": worker, "cpu_load": cpu_load,
                               "controller": _busy_children(controller),
                               "own": _busy_children(os.getpid()) if worker else []}))

def test_one(cpu_load):
    _record("one", cpu_load)

def test_two(cpu_load):
    _record("two", cpu_load)
'''


def test_stress_load_is_started_once_per_run_by_the_controller(tmp_path: Path) -> None:
    if not Path("/proc/self/stat").exists():
        import pytest
        pytest.skip("reads /proc")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "STRESS_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.stress",
         "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), "-n", "2",
         "--dist", "each", "--stress", str(tmp_path / "test_inner.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(p.read_text()) for p in sorted(out.iterdir())]
    # --dist each: both tests ran on both workers, so the files hold the last writer of each.
    assert {r["worker"] for r in records} <= {"gw0", "gw1"} and records
    for record in records:
        assert len(record["controller"]) == cores(), record
        assert record["own"] == [], record
        assert record["cpu_load"] == cores(), record
    assert len({tuple(r["controller"]) for r in records}) == 1, records
