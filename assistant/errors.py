"""Errors that carry a message meant for the user (shown without a traceback).

`HintedError` (indexing/errors.py) is the root of every user-facing error in every layer, so
the CLI and the TUI map errors with one `except HintedError`. `UserError` is the assistant
layer's own; indexing's (KnowledgeError, ManifestError, IndexBusy, VectorStoreError…), the
config's and the TUI's themes' derive from the root directly.
"""

from indexing.errors import HintedError

__all__ = ["HintedError", "UserError"]


class UserError(HintedError):
    """Bad input or state the user can fix; the CLI prints it and exits 1."""
