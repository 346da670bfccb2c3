"""The network guard also covers the Python subprocesses tests start (tests/netguard_site,
put on PYTHONPATH by conftest): loopback works, anything else fails the child loudly. The refused
attempt runs inside `unshare -n`, so even a broken guard could not send a packet anywhere."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest

from tests.e2e.test_offline import WHY_NOT


def _child(code: str, *, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ))


def test_children_get_the_guard_and_keep_loopback() -> None:
    assert "netguard_site" in os.environ.get("PYTHONPATH", "")
    server = socket.create_server(("127.0.0.1", 0))
    try:
        port = server.getsockname()[1]
        done = _child(f"import socket; socket.create_connection(('127.0.0.1', {port}), 5)"
                      "; print('connected')")
        assert done.returncode == 0, done.stderr
        assert "connected" in done.stdout
        assert done.stderr == "", "the guard must be silent in a well-behaved child"
    finally:
        server.close()
    assert _child("import socket; print(socket.socket.connect.__module__)").stdout.strip() == \
        "tests.netguard"


@pytest.mark.skipif(WHY_NOT is not None or shutil.which("unshare") is None,
                    reason=f"no network namespace: {WHY_NOT}")
def test_a_child_reaching_out_fails_loudly() -> None:
    done = _child("import socket; socket.getaddrinfo('example.com', 443)",
                  prefix=("unshare", "-n"))
    assert done.returncode != 0
    assert "NetworkAccessError" in done.stderr and "example.com" in done.stderr
