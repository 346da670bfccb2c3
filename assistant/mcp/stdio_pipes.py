"""stdin/stdout for the SDK's stdio transport, read and written on the event loop.

The SDK's `stdio_server()` wraps the standard streams with `anyio.wrap_file`, which runs every
`readline`, `write` and `flush` on a worker thread: three thread hand-offs per message, more
than the work of a `log_event` itself, and on a loaded machine each hand-off waits for a core
(measured, issue 26). `stdio_server(stdin, stdout)` accepts other streams, so when both are
pipes (what every MCP client launches us with) they are read and written here by asyncio's
own pipe transports instead. The JSON-RPC framing, parsing and validation stay the SDK's.

The wire is claimed the way the SDK claims it: the pipes move to private descriptors and fd 0/1
point at /dev/null and stderr while serving, so a stray `print` or a child process cannot
corrupt the protocol. Anything but a pipe (a terminal, a file) is left to the SDK's own path.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

# A JSON-RPC message is one line; the SDK's own reader has no bound at all. A longer line is
# answered as unparseable (the SDK's parse error) and the server carries on.
MAX_LINE_BYTES = 256 * 1024 * 1024


def both_pipes() -> bool:
    """Whether stdin and stdout are pipes or sockets (the fast path applies)."""
    try:
        return all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
                   for mode in (os.fstat(0).st_mode, os.fstat(1).st_mode))
    except OSError:
        return False


class LineReader:
    """The `async for line in stdin` side of an `anyio.AsyncFile[str]`."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readline()
        except ValueError:  # longer than MAX_LINE_BYTES: the SDK answers a parse error
            return "\n"
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class LineWriter:
    """The `write` + `flush` side of an `anyio.AsyncFile[str]`."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()  # waits only while the pipe is full


def _claim(fd: int, diversion: int) -> int:
    """Move the wire on `fd` to a private descriptor; `fd` then points at `diversion`."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    return private


@asynccontextmanager
async def loop_pipes() -> AsyncIterator[tuple[Any, Any]]:
    """(stdin, stdout) for `stdio_server`, on the running asyncio loop; the standard
    descriptors are restored (and left blocking, as they were) on exit."""
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        read_fd = _claim(0, null)
        write_fd = _claim(1, 2)
    finally:
        os.close(null)
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader),
            os.fdopen(read_fd, "rb", buffering=0, closefd=False))
        transports.append(transport)
        w_transport, w_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin,
            os.fdopen(write_fd, "wb", buffering=0, closefd=False))
        transports.append(w_transport)
        # flush() then returns only once the pipe took every byte, as a blocking flush would:
        # nothing is left in our buffer when the server stops.
        w_transport.set_write_buffer_limits(high=0)
        writer = asyncio.StreamWriter(w_transport, w_protocol, None, loop)
        yield LineReader(reader), LineWriter(writer)
    finally:
        for one in transports:
            one.close()
        for fd, private in ((0, read_fd), (1, write_fd)):
            with suppress(OSError):
                os.set_blocking(private, True)  # the pipe is shared with whoever launched us
                os.dup2(private, fd)
                os.close(private)
