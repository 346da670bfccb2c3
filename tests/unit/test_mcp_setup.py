"""`brain mcp`'s setup pieces: argument checks, the bind/token rule, doctor's line, --help."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from assistant.errors import UserError
from assistant.events.model import EventType, NewEvent
from assistant.events.store import EventStore
from assistant.mcp.arguments import ToolInputError, check_arguments
from assistant.mcp.http_auth import parse_bind, resolve_token
from assistant.mcp.status import mcp_summary
from assistant.mcp.tools import BY_NAME, TOOLS


def test_every_tool_schema_is_closed_and_described() -> None:
    for tool in TOOLS:
        schema = tool.input_schema
        assert schema["additionalProperties"] is False
        assert len(tool.description) > 80
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (tool.name, name)


def test_defaults_are_filled_and_integral_floats_taken() -> None:
    schema = BY_NAME["search_knowledge"].input_schema
    assert check_arguments(schema, {"query": "x", "top_k": 3.0}) == {
        "query": "x", "top_k": 3, "since": None, "until": None, "path": None}
    with pytest.raises(ToolInputError, match=r"top_k must be an integer, got float 2\.5"):
        check_arguments(schema, {"query": "x", "top_k": 2.5})
    with pytest.raises(ToolInputError, match="must be an integer, got bool"):
        check_arguments(schema, {"query": "x", "top_k": True})
    with pytest.raises(ToolInputError, match="query must not be empty"):
        check_arguments(schema, {"query": "   "})


@pytest.mark.parametrize("text, host, port, loopback", [
    ("8765", "127.0.0.1", 8765, True), ("localhost:9", "localhost", 9, True),
    ("[::1]:80", "::1", 80, True), ("0.0.0.0:80", "0.0.0.0", 80, False),
    ("brain.lan:80", "brain.lan", 80, False),
])
def test_bind(text: str, host: str, port: int, loopback: bool) -> None:
    bind = parse_bind(text)
    assert (bind.host, bind.port, bind.loopback) == (host, port, loopback)


def test_token_rule(tmp_path: Path) -> None:
    assert resolve_token(parse_bind("8765"), configured="", token_file=None) is None
    with pytest.raises(UserError, match=r"refusing to serve 0\.0\.0\.0 without a token"):
        resolve_token(parse_bind("0.0.0.0:8765"), configured="", token_file=None)
    with pytest.raises(UserError, match="shorter than 16"):
        resolve_token(parse_bind("0.0.0.0:8765"), configured="short", token_file=None)
    file = tmp_path / "token"
    file.write_text("a-long-enough-token-from-a-file\n")
    assert resolve_token(parse_bind("0.0.0.0:1"), configured="", token_file=str(file)) == \
        "a-long-enough-token-from-a-file"
    with pytest.raises(UserError, match="--http 'nope'"):
        parse_bind("nope")


def test_doctor_line_and_help(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[mcp]\nallow_writes = true\n")
    ctx = AppContext.load(str(home))
    store = EventStore.open(ctx.paths.events_db)
    store.log(NewEvent(EventType.NOTE, "hello"))
    store.close()
    ok, detail, _ = mcp_summary(ctx)
    assert ok and "memory writes on" in detail and "1 agent event, 1 awaiting vectors" in detail
    with pytest.raises(SystemExit):
        main(["mcp", "--help"])
    out = capsys.readouterr().out
    for tool in TOOLS:
        assert tool.name in out
