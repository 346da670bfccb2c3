"""The one error shape every layer shows the user: a message plus an optional fix hint."""

from __future__ import annotations


class HintedError(Exception):
    """An error whose message (and hint) are meant for the user, shown without a traceback."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        message = super().__str__()
        return f"{message}\n  hint: {self.hint}" if self.hint else message
