"""A Rust panic's own report (written to fd 2 by its hook, below Python) stays off the
terminal around Chroma's opens; everything else written there meanwhile comes through."""

from __future__ import annotations

import os

import pytest

from indexing.quiet_panics import rust_panics_silenced, strip_panics

PANIC = (b"thread '<unnamed>' panicked at rust/sqlite/src/db.rs:157:42:\n"
         b"called `Result::unwrap()` on an `Err` value: Database(malformed)\n"
         b"stack backtrace:\n   0: rust_begin_unwind\n             at /rustc/x/panicking.rs:665:5\n"
         b"note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose "
         b"backtrace.\n")


class PanicException(BaseException):  # what pyo3 raises: not an Exception
    pass


def test_the_panic_report_written_to_fd_2_never_reaches_the_terminal(
        capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PanicException), rust_panics_silenced():
        os.write(2, b"before\n" + PANIC + b"after\n")
        raise PanicException("malformed")
    err = capfd.readouterr().err
    assert "panicked at" not in err and "stack backtrace" not in err
    assert "RUST_BACKTRACE" not in err
    assert err == "before\nafter\n"


def test_a_report_without_its_closing_note_is_dropped_to_the_end() -> None:
    short = b"thread 'main' panicked at src/lib.rs:1:1:\nboom\n"
    assert strip_panics(b"kept\n" + short) == b"kept\n"
    plain = (b"thread '<unnamed>' panicked at x.rs:1:1:\nmsg\nnote: run with "
             b"`RUST_BACKTRACE=1` environment variable to display a backtrace\nlater\n")
    assert strip_panics(plain) == b"later\n"


def test_silencing_nests_and_restores_fd_2(capfd: pytest.CaptureFixture[str]) -> None:
    with rust_panics_silenced(), rust_panics_silenced():
        os.write(2, PANIC)
    os.write(2, b"visible\n")
    assert capfd.readouterr().err == "visible\n"
