"""A client or server killed in the middle of a flood of `log_event` calls leaves the event log
consistent: every stored event whole, with its keywords, and the next server carries on."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from assistant.context import AppContext
from assistant.events.store import EventStore
from tests.fixtures.mcp import ROOT, McpHome, stdio_session, wait_group_gone

FLOOD = """
import sys, anyio
from pathlib import Path
from tests.fixtures.mcp import McpHome, stdio_session

async def flood() -> None:
    async with stdio_session(McpHome(Path(sys.argv[1]), Path(sys.argv[1]))) as session:
        n = 0
        while True:
            await session.call_tool("log_event", {
                "type": "action", "text": f"flood step {n} zebra", "session": "flood"})
            n += 1

anyio.run(flood)
"""


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # being created



@pytest.mark.parametrize("after, whom", [(3, "all"), (60, "all"), (25, "client")])
def test_killed_mid_flood_leaves_the_log_consistent(tmp_path: Path, after: int,
                                                     whom: str) -> None:
    home = McpHome(tmp_path / "home", tmp_path)
    db = AppContext.load(str(home.root)).paths.events_db
    client = subprocess.Popen([sys.executable, "-c", FLOOD, str(home.root)], env=home.env(),
                              cwd=str(ROOT), start_new_session=True,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while _count(db) < after:  # the exact state: this many events committed
        assert client.poll() is None, "the flooding client died by itself"
        assert time.monotonic() < deadline, "the flood never got going"
        time.sleep(0.01)
    if whom == "all":
        os.killpg(client.pid, signal.SIGKILL)  # server and client, mid-call
    else:
        client.kill()  # the client alone: the server sees its stdin close
    client.wait(timeout=30)
    wait_group_gone(client.pid)  # the orphaned server ends by itself

    store = EventStore.open(db)
    try:
        assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        total = store.count()
        assert total >= after
        assert store.keywords.count() == total  # no event without its keywords, nor the reverse
        texts = {e.text for e in store.list(limit=total)}
        assert texts == {f"flood step {n} zebra" for n in range(total)}  # whole, in order
    finally:
        store.close()

    async def carry_on() -> None:
        async with stdio_session(home) as session:
            done = await session.call_tool("log_event", {"type": "note", "text": "after"})
            assert not done.is_error
            found = await session.call_tool("query_events", {"query": "zebra", "top_k": 100})
            # Every flood event is found (the note may be too: a search embeds the few events
            # just logged, and nearest neighbours by meaning include weak ones).
            events = found.structured_content["events"]
            assert sum("zebra" in e["text"] for e in events) == min(total, 100)

    anyio.run(carry_on)
