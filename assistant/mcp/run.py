"""Running `brain mcp`: stdio (what desktop clients launch) or streamable HTTP."""

from __future__ import annotations

import sys
import time
from typing import Any

from assistant.mcp.background import IdleWork
from assistant.mcp.handlers import BrainTools
from assistant.mcp.http_auth import Bind, require_bearer
from assistant.mcp.server import BrainServer
from assistant.services import Services


def _setup(services: Services) -> tuple[BrainServer, IdleWork]:
    # stdout is the protocol on stdio; our records go to the log file (assistant/logfile.py,
    # installed by the CLI), so a client's stderr pane shows only what the SDK itself warns.
    holder: list[IdleWork] = []
    tools = BrainTools(services, on_event=lambda: holder[0].poke())
    server = BrainServer(tools)
    idle = IdleWork(tools, busy=lambda: server.busy > 0,
                    idle_for=lambda: time.monotonic() - server.last_call)
    holder.append(idle)
    idle.start()
    idle.poke()  # events an earlier run left without vectors
    return server, idle


def run_stdio(services: Services) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server, idle = _setup(services)
    app = server.build()

    from assistant.mcp.stdio_pipes import both_pipes, loop_pipes

    async def serve() -> None:
        if not both_pipes():  # a terminal or a file: the SDK's threaded reader and writer
            async with stdio_server() as (read, write):
                await app.run(read, write, app.create_initialization_options())
            return
        async with loop_pipes() as (stdin, stdout), stdio_server(stdin, stdout) as (read, write):
            await app.run(read, write, app.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        idle.stop()
        server.tools.close()


def run_http(services: Services, bind: Bind, token: str | None) -> None:
    import uvicorn

    server, idle = _setup(services)
    app: Any = server.build().streamable_http_app(host=bind.host)
    if token is not None:
        app = require_bearer(app, token)
    print(f"brain mcp: serving {bind.url}" + (" (bearer token required)" if token else ""),
          file=sys.stderr, flush=True)
    try:
        uvicorn.run(app, host=bind.host, port=bind.port, log_level="warning",
                    lifespan="on")
    finally:
        idle.stop()
        server.tools.close()
