"""Errors that carry a message meant for the user (shown without a traceback)."""

from indexing.errors import HintedError


class UserError(HintedError):
    """Bad input or state the user can fix; the CLI prints it and exits 1."""

