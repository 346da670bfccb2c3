"""The offline guarantee: a full flow (index, search, ask, memory extraction) with no network but
loopback, in a network namespace of its own (`unshare -n`).

Inside the namespace only `lo` exists, so any attempt to reach another host fails at once —
whichever library, thread or subprocess makes it. The flow runs the installed `brain` with the
default bundled embedding model and without HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE in its
environment: the app itself must never need the network. In-process, tests/netguard.py fails any
non-loopback connect for the whole suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _netns_usable() -> str | None:
    """None if `unshare -n` with a working loopback is available, else why not."""
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"],
                           capture_output=True, text=True, timeout=20)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.strip() or probe.returncode}"
    return None


WHY_NOT = _netns_usable()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(420),
    pytest.mark.skipif(WHY_NOT is not None, reason=f"no network namespace: {WHY_NOT}"),
]


def _in_netns(argv: list[str], *, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *argv],
        capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env,
    )


def test_full_flow_with_only_loopback(tmp_path: Path) -> None:
    if not Path(sys.executable).with_name("brain").exists():
        pytest.skip("the `brain` entry point is not installed")
    done = _in_netns([sys.executable, "-m", "tests.e2e.offline_flow", str(tmp_path)],
                     cwd=ROOT, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["interfaces"] == ["lo"], "the flow did not run without network"

    for step in ("index", "search", "ask", "memories"):
        ran = result[step]
        assert ran["code"] == 0, f"`brain {step}` failed offline:\n{ran['out']}\n{ran['err']}"
    assert "1 added" in result["index"]["out"]
    hits = json.loads(result["search"]["out"])["hits"]
    assert hits and hits[0]["source"].endswith("restore.md")
    assert "Run restic restore latest [1]." in result["ask"]["out"]
    assert "restore.md" in result["ask"]["out"]
    assert result["extraction_requests"] >= 1
    assert "The user's NAS is called vaultbox." in result["memories"]["out"]


def test_namespace_really_has_no_route_out(tmp_path: Path) -> None:
    """The guarantee above means something only if the namespace is really cut off."""
    done = _in_netns(["ip", "-o", "route"], cwd=tmp_path, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "default" not in done.stdout
    links = _in_netns(["ip", "-o", "link"], cwd=tmp_path, timeout=30)
    names = [row.split(":")[1].strip() for row in links.stdout.splitlines()]
    assert names == ["lo"]
