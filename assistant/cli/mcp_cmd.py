"""`brain mcp`: serve knowledge, memory, conversations and the agent event log to MCP
clients (Claude Code, Claude Desktop, Cursor, oterm…)."""

from __future__ import annotations

import argparse

from assistant.cli.common import context
from assistant.services import Services


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from assistant.mcp.tools import help_text

    parser = sub.add_parser(
        "mcp", help="serve your brain to AI agents over the Model Context Protocol",
        description="An MCP server over your indexed files, memories, earlier chats and the "
        "agent event log. stdio by default (what desktop clients launch); --http serves "
        "streamable HTTP. Memory writes are off unless mcp.allow_writes = true.",
        epilog=help_text(allow_writes=True).replace(" (off: mcp.allow_writes)", "")
        + "\n\nremember and forget_memory are offered only with mcp.allow_writes = true.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http", metavar="[HOST:]PORT",
                        help="serve streamable HTTP at http://HOST:PORT/mcp (HOST defaults to "
                        "127.0.0.1; another address needs a token)")
    parser.add_argument("--token-file", metavar="FILE",
                        help="bearer token HTTP clients must send (default: mcp.token)")
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from assistant.errors import UserError
    from assistant.mcp.sdk_import import load_server_sdk

    load_server_sdk()  # before anything imports the SDK the slow way
    # The server's stores, each opened once on first use; the server closes them at its end.
    services = Services(context(args), origin="mcp")
    ctx = services.ctx
    if args.http is None:
        if args.token_file:
            raise UserError("--token-file applies to --http only")
        from assistant.mcp.run import run_stdio

        run_stdio(services)
        return 0
    from assistant.mcp.http_auth import parse_bind, resolve_token
    from assistant.mcp.run import run_http

    bind = parse_bind(args.http)
    token = resolve_token(bind, configured=ctx.config.mcp.token, token_file=args.token_file)
    run_http(services, bind, token)
    return 0
