"""Keep the text of a Rust panic in Chroma's bindings off the terminal.

A damaged store can make Chroma's Rust side panic while it opens. pyo3 turns the panic into a
`PanicException` that indexing/vectors.py catches and reports as one line, but Rust's panic
hook has written its own report to file descriptor 2 first (`thread '<unnamed>' panicked at
rust/sqlite/src/db.rs…`, `stack backtrace:` and its frames with RUST_BACKTRACE set), below
Python's `sys.stderr`, where no `except` reaches. So around the risky opens, fd 2 points at a
temporary file; afterwards everything written there goes back to the real stderr except the
panic reports.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_PANIC = re.compile(rb"^thread '[^']*' panicked at ")
_PYO3 = (b"--- PyO3 is resuming a panic", b"Python stack trace below:")
_lock = threading.RLock()
_depth = 0


def strip_panics(text: bytes) -> bytes:
    """`text` without Rust panic reports: from a `thread '…' panicked at` line through its
    closing `note: …` line (the hint about RUST_BACKTRACE, or the one after a backtrace), or
    to the end when the report is cut short."""
    kept: list[bytes] = []
    inside = False
    for line in text.splitlines(keepends=True):
        if _PANIC.match(line) or line.startswith(_PYO3):
            inside = True
            continue
        if inside:
            if line.startswith(b"note: "):
                inside = False
            continue
        kept.append(line)
    return b"".join(kept)


@contextmanager
def rust_panics_silenced() -> Iterator[None]:
    """Run the block with fd 2 captured; re-emit what was written, minus panic reports.
    Re-entrant; threads take turns (only for opens, never for every query)."""
    global _depth
    with _lock:
        if _depth:
            _depth += 1
            try:
                yield
            finally:
                _depth -= 1
            return
        try:
            capture = tempfile.TemporaryFile()  # noqa: SIM115 — closed by the `with` below
            saved = os.dup(2)
        except OSError:  # no temporary file (full disk): better the panic text than no open
            yield
            return
        with capture:
            _flush()
            os.dup2(capture.fileno(), 2)
            _depth = 1
            try:
                yield
            finally:
                _depth = 0
                _flush()
                os.dup2(saved, 2)
                os.close(saved)
                capture.seek(0)
                rest = strip_panics(capture.read())
                if rest:
                    os.write(2, rest)


def _flush() -> None:
    with suppress(OSError, ValueError, AttributeError):  # a closed or absent sys.stderr
        sys.stderr.flush()
