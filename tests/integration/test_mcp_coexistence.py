"""`brain mcp` next to `brain index --watch`: a note changed while both run is found through
the server at the watcher's next sync, and the agent's writes go on meanwhile."""

from __future__ import annotations

import subprocess

import anyio

from tests.fixtures.mcp import ROOT, McpHome, stdio_session


def test_server_sees_what_the_watcher_indexes(mcp_home: McpHome) -> None:
    mcp_home.configure("[indexing]\nwatch_debounce_ms = 100\n")
    watch = subprocess.Popen(mcp_home.command("--watch", brain="index"), env=mcp_home.env(),
                             cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        assert watch.stdout is not None
        for line in watch.stdout:
            if "Watching for changes" in line:
                break
        else:
            raise AssertionError("the watcher never started")

        async def scenario() -> None:
            async with stdio_session(mcp_home) as session:
                before = await session.call_tool("search_knowledge", {"query": "kayak paddle"})
                assert not any(h["source"].endswith("kayak.md")
                               for h in before.structured_content["hits"])
                note = mcp_home.notes / "sport" / "kayak.md"
                note.parent.mkdir()
                note.write_text("# Kayak\n\nA kayak paddle is feathered at 45 degrees.\n")
                assert watch.stdout is not None
                # The exact state: the watcher prints a line only after a sync that changed
                # something has committed.
                report = watch.stdout.readline()
                assert "added" in report, report
                logged = await session.call_tool("log_event", {
                    "type": "observation", "text": "the watcher indexed a kayak note"})
                assert not logged.is_error
                after = await session.call_tool("search_knowledge", {"query": "kayak paddle"})
                assert after.structured_content["hits"][0]["source"] == str(note)

        anyio.run(scenario)
    finally:
        watch.terminate()
        watch.wait(timeout=30)
