"""`brain mcp` driven by the official SDK's client, over stdio and streamable HTTP: tools,
resources, bad input, the write switch and provenance, tokens, two clients, other processes."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest

from tests.fixtures.mcp import CLIENT, ROOT, McpHome, http_session, stdio_session


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search_knowledge", {"query": "login", "colour": "red"}, "unknown argument 'colour'"),
    ("search_knowledge", {"query": 42}, "query must be a string"),
    ("search_knowledge", {"query": "login", "top_k": 0}, "top_k must be between 1 and 50"),
    ("search_knowledge", {"query": "login", "top_k": 10_000}, "between 1 and 50, got 10000"),
    ("search_knowledge", {"query": "x" * 1_000_000}, "1,000,000 characters long"),
    ("search_knowledge", {"query": "login", "since": "the day after never"},
     "not a date or a span"),
    ("search_knowledge", {}, "missing required argument 'query'"),
    ("query_events", {"types": ["thought"]}, "types[0] must be one of"),
    ("query_events", {"min_importance": 2}, "between 0 and 1"),
    ("log_event", {"type": "note", "text": "ok", "parent": "evnope"}, "no event with id"),
    ("log_event", {"type": "summary", "text": "I summarise"}, "type must be one of"),
    ("log_event", {"type": "note", "text": "ok", "ts": "yesterday-ish"}, "not an ISO-8601"),
    ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ("remember", {"text": "The user likes tea"}, "remember is off"),
]


def test_stdio_tools_resources_and_bad_input(mcp_home: McpHome) -> None:
    async def scenario() -> None:
        async with stdio_session(mcp_home) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            # Writes are off by default: the write tools are not even offered.
            assert names == ["search_knowledge", "search_conversations", "recall_memories",
                             "log_event", "query_events"]

            found = await session.call_tool("search_knowledge",
                                            {"query": "password bcrypt login", "top_k": 2})
            assert not found.is_error, _text(found)
            best = found.structured_content["hits"][0]
            assert best["source"] == str(mcp_home.notes / "auth" / "login.md")
            assert best["lines"][0] >= 1 and best["heading"] == "Login"
            assert set(best["scores"]) == {"vector", "keyword", "fused"}
            assert "login.md" in _text(found)

            for tool, args, reason in BAD_CALLS:
                result = await session.call_tool(tool, args)
                assert result.is_error, (tool, args)
                assert reason in _text(result) and "\n" not in _text(result), _text(result)

            goal = await session.call_tool("log_event", {
                "type": "goal", "text": "fix the flaky login test", "session": "login-bug",
                "importance": 0.9})
            goal_id = goal.structured_content["event"]["id"]
            assert goal.structured_content["event"]["agent"] == CLIENT[0]
            await session.call_tool("log_event", {
                "type": "error", "text": "test_login times out waiting for the mock server",
                "session": "login-bug", "parent": goal_id})
            await session.call_tool("log_event", {"type": "note", "text": "lunch at noon"})
            errors = await session.call_tool("query_events", {
                "query": "login timeout", "types": ["error"]})
            assert [e["type"] for e in errors.structured_content["events"]] == ["error"]
            assert errors.structured_content["events"][0]["parent"] == goal_id
            ranked = await session.call_tool("query_events", {"min_importance": 0.8})
            assert [e["id"] for e in ranked.structured_content["events"]] == [goal_id]

            # Resources: an indexed file by its URI, never another file.
            source = best["source"]
            read = await session.read_resource(f"file://{source}")
            assert "bcrypt" in read.contents[0].text
            from mcp.shared.exceptions import MCPError

            with pytest.raises(MCPError, match="not an indexed file"):
                await session.read_resource("file:///etc/passwd")
            listed = {str(r.uri) for r in (await session.list_resources()).resources}
            assert {"brain://memory/profile", "brain://folders", f"file://{source}"} <= listed

            # After every bad call the server still answers.
            again = await session.call_tool("search_knowledge", {"query": "restic backups"})
            assert again.structured_content["hits"][0]["source"].endswith("backup.md")

    anyio.run(scenario)
    # What the agent logged is visible to the CLI, in another process.
    out = _brain(mcp_home, "events", "list", "--session", "login-bug")
    assert "fix the flaky login test" in out and "test_login times out" in out


def _brain(home: McpHome, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "assistant.cli.main", "--home",
                           str(home.root), *args], env=home.env(), cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_writes_when_allowed_name_the_client_and_can_be_undone(mcp_home: McpHome) -> None:
    from assistant.context import AppContext
    from assistant.memory.model import Actor
    from assistant.memory.service import open_memory

    mcp_home.configure("[mcp]\nallow_writes = true\n")
    ctx = AppContext.load(str(mcp_home.root))
    watcher = open_memory(ctx)  # another process's view, as the TUI's memory pane polls it
    before = watcher.change_count()

    async def scenario() -> str:
        async with stdio_session(mcp_home) as session:
            assert "remember" in [t.name for t in (await session.list_tools()).tools]
            stored = await session.call_tool("remember", {
                "text": "The user deploys with Ansible", "type": "procedure"})
            assert not stored.is_error, _text(stored)
            memory_id = stored.structured_content["memory"]["id"]
            same = await session.call_tool("remember", {
                "text": "The user deploys with Ansible", "type": "procedure"})
            assert same.structured_content["status"] == "already known"
            secret = await session.call_tool("remember", {
                "text": "The user's GitHub token is ghp_" + "a" * 36})
            assert secret.is_error and "not" in _text(secret)
            recalled = await session.call_tool("recall_memories", {"query": "deploy Ansible"})
            assert recalled.structured_content["memories"][0]["id"] == memory_id
            unknown = await session.call_tool("forget_memory", {"id": memory_id[:4]})
            assert unknown.is_error and "no active memory" in _text(unknown)
            return str(memory_id)

    memory_id = anyio.run(scenario)
    assert watcher.change_count() != before  # the pane's poll sees the agent's write
    memory = watcher.get(memory_id)
    assert memory.source == f"mcp:{CLIENT[0]} {CLIENT[1]}"
    history = watcher.history(memory_id)
    assert history[-1].actor is Actor.AGENT and history[-1].via == memory.source
    assert f"(by mcp:{CLIENT[0]} {CLIENT[1]})" in _brain(mcp_home, "memory", "history",
                                                          memory_id)
    _brain(mcp_home, "memory", "undo", memory_id)
    assert watcher.get(memory_id).status.value == "deleted"
    watcher.close()


def test_http_needs_the_token_and_serves_two_clients(
    http_server: tuple[str, str, McpHome],
) -> None:
    url, token, _home = http_server

    async def refused() -> None:
        async with http_session(url, "wrong-token-wrong-token-wrong"):
            pass

    with pytest.raises(BaseException, match="error"):  # the SDK's group of its MCPError
        anyio.run(refused)
    for header in ({}, {"Authorization": "Bearer wrong-token-wrong-token-wrong"}):
        request = urllib.request.Request(url, data=b"{}", method="POST", headers={
            "Content-Type": "application/json", **header})
        with pytest.raises(urllib.error.HTTPError) as refusal:
            urllib.request.urlopen(request, timeout=30)
        assert refusal.value.code == 401
        assert refusal.value.headers["WWW-Authenticate"].startswith("Bearer")

    async def client(name: str, results: dict[str, list[str]]) -> None:
        async with http_session(url, token, name=name) as session:
            for n in range(10):
                logged = await session.call_tool("log_event", {
                    "type": "action", "text": f"{name} step {n}", "session": name})
                assert not logged.is_error, _text(logged)
            found = await session.call_tool("query_events", {"session": name, "top_k": 50})
            results[name] = sorted(e["text"] for e in found.structured_content["events"])
            assert {e["agent"] for e in found.structured_content["events"]} == {name}

    async def both() -> dict[str, list[str]]:
        results: dict[str, list[str]] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(client, "agent-a", results)
            group.start_soon(client, "agent-b", results)
        return results

    results = anyio.run(both)
    for name in ("agent-a", "agent-b"):
        assert results[name] == sorted(f"{name} step {n}" for n in range(10))


def test_non_loopback_http_without_a_token_is_refused(mcp_home: McpHome) -> None:
    done = subprocess.run(mcp_home.command("--http", "0.0.0.0:0"), env=mcp_home.env(),
                          cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "refusing to serve 0.0.0.0 without a token" in done.stderr
