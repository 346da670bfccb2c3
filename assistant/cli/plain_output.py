"""Every line the CLI writes passes through `plain` (assistant/plain_text.py).

Stored text reaches stdout and stderr from many places (search hits, answers and sources,
sessions, memories, folders, the log, eval, doctor details, error messages naming a path), so
the sanitiser sits on the streams themselves for the length of a command: no output path can
forget it, on a terminal and in a pipe alike. The CLI's own terminal controls (the `ask` status
line, progress bars) are written to `terminal(stream)`, the stream underneath. `--json` output
escapes what `plain` would change (common.print_json), so it stays exact JSON.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO, cast

from assistant.plain_text import plain


class PlainWriter:
    """A text stream that writes `plain(text)` to the stream it wraps."""

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(plain(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, buffer…
        return getattr(self.wrapped, name)


def terminal(stream: TextIO) -> TextIO:
    """The stream under a `PlainWriter`, for the CLI's own escape sequences; else `stream`."""
    return stream.wrapped if isinstance(stream, PlainWriter) else stream


@contextlib.contextmanager
def plain_output() -> Iterator[None]:
    """stdout and stderr sanitised until the block ends (then restored as they were)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, PlainWriter(sys.stdout))
    sys.stderr = cast(TextIO, PlainWriter(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
