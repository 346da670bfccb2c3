"""Errors that carry a message meant for the user (shown without a traceback)."""


class UserError(Exception):
    """Bad input or state the user can fix; the CLI prints it and exits 1."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        message = super().__str__()
        return f"{message}\n  hint: {self.hint}" if self.hint else message
