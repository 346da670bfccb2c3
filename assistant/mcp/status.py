"""How `brain mcp` is set up, for `brain doctor`: the SDK, the write switch, the HTTP token
and the event log, in one line (without importing the SDK or opening more than one file)."""

from __future__ import annotations

import sqlite3
from importlib import metadata

from assistant.context import AppContext


def mcp_summary(ctx: AppContext) -> tuple[bool, str, str]:
    """(ok, detail, hint)."""
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return False, "the mcp SDK is not installed", "reinstall second-brain (`make`)"
    mcp = ctx.config.mcp
    writes = "memory writes on" if mcp.allow_writes else "memory writes off (mcp.allow_writes)"
    token = "HTTP token set" if mcp.token.strip() else "no HTTP token (loopback only)"
    return True, f"SDK {version}; {writes}; {token}; {_events(ctx)}", ""


def _events(ctx: AppContext) -> str:
    path = ctx.paths.events_db
    if not path.exists():
        return "no agent events yet"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            total, pending = conn.execute(
                "SELECT count(*), count(*) - count(vector) FROM events").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return f"event log unreadable ({exc})"
    waiting = f", {pending:,} awaiting vectors" if pending else ""
    return f"{total:,} agent event{'' if total == 1 else 's'}{waiting}"
