"""The one error shape every layer shows the user: a message plus an optional fix hint.

Every user-facing error of every layer derives from `HintedError`, so the CLI (`brain: error:`)
and the TUI (a notification) handle them all with one `except`; anything else is a bug and keeps
its traceback.
"""

from __future__ import annotations


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
