"""`brain mcp`'s start-up: the SDK's server side imported without its client and high-level
server, its models built on first use; stdin/stdout pipes served on the event loop with the
wire claimed and given back. Each case runs in a fresh interpreter (imports are per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(script: str, *, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", script], input=stdin, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)


def test_the_server_sdk_loads_without_the_client_and_completes_on_demand() -> None:
    done = _python(
        "import sys\n"
        "from assistant.mcp.sdk_import import load_server_sdk\n"
        "load_server_sdk()\n"
        "from mcp.server.lowlevel import Server\n"
        "from mcp.server.stdio import stdio_server\n"
        "import pydantic, mcp_types\n"
        "print(sorted(m for m in ('mcp.client', 'mcp.server.mcpserver') if m in sys.modules))\n"
        "print('defer_build' in pydantic.BaseModel.model_config,"
        " mcp_types.Tool.model_config.get('defer_build'))\n"
        "tool = mcp_types.Tool(name='t', input_schema={'type': 'object'})\n"
        "print(tool.model_dump(by_alias=True)['inputSchema'])\n"
        "from mcp import ClientSession\n"  # the real package __init__ runs when asked
        "print(ClientSession.__name__, 'mcp.client' in sys.modules)\n")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == [
        "[]", "False True", "{'type': 'object'}", "ClientSession True"]


def test_pipes_are_served_on_the_loop_and_given_back() -> None:
    script = (
        "import asyncio, os, sys\n"
        "from assistant.mcp.stdio_pipes import both_pipes, loop_pipes\n"
        "assert both_pipes()\n"
        "async def main():\n"
        "    async with loop_pipes() as (stdin, stdout):\n"
        "        print('stray output goes to stderr', flush=True)\n"
        "        os.write(1, b'stray bytes too\\n')\n"
        "        async for line in stdin:\n"
        "            await stdout.write(str(len(line)) + ' ' + line[:5] + '\\n')\n"
        "            await stdout.flush()\n"
        "asyncio.run(main())\n"
        "print('fd 1 is ours again', os.get_blocking(1), flush=True)\n")
    big = b"x" * 300_000  # past asyncio's 64 KiB default line limit
    done = _python(script, stdin=b"hello\n" + big + b"\nlast")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == [
        "6 hello", f"{len(big) + 1} xxxxx", "4 last", "fd 1 is ours again True"]
    assert "stray output goes to stderr" in done.stderr.decode()
    assert "stray bytes too" in done.stderr.decode()
