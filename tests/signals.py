"""Child processes that a test interrupts with SIGINT, as a user's Ctrl+C would."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """`preexec_fn` for such a child: a shell starts background jobs with SIGINT ignored and
    children inherit that, so a suite run in the background (`make test &`) would send its
    Ctrl+C into the void and wait for a process that never hears it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
