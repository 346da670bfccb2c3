"""The one error shape every layer shows the user: a message plus an optional fix hint.

Every user-facing error of every layer derives from `HintedError`, so the CLI (`brain: error:`)
and the TUI (a notification) handle them all with one `except`; anything else is a bug and keeps
its traceback (`log_failure`: where a boundary catches everything and goes on).
"""

from __future__ import annotations

import logging


class HintedError(Exception):
    """An error whose message (and hint) are meant for the user, shown without a traceback."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    @property
    def message(self) -> str:
        """The message without the hint (for UIs that show the hint apart)."""
        return str(self.args[0]) if self.args else ""

    def __str__(self) -> str:
        message = super().__str__()
        return f"{message}\n  hint: {self.hint}" if self.hint else message


def log_failure(log: logging.Logger, message: str, exc: BaseException, *,
                level: int = logging.WARNING,
                foreseen: tuple[type[BaseException], ...] = ()) -> None:
    """Log a failure that a boundary caught and went on from, as `message: exc` at `level`.

    A `HintedError` or one of `foreseen` is one line: its words are the whole story. Anything
    else (a bug, or a library failing in a way nobody named) also gets its traceback, at INFO
    at least (what the log file keeps), so a catch-all never swallows one.
    """
    if isinstance(exc, (HintedError, *foreseen)):
        log.log(level, "%s: %s", message, exc)
    else:
        log.log(max(level, logging.INFO), "%s: %s", message, exc, exc_info=exc)
