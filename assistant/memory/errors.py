"""The memory store's refusals: each a `UserError` the CLI prints and the TUI notifies.

(An import's `AlreadyImported` and `ImportConflict` are the shared import run's, in
`assistant/import_run.py`.)
"""

from __future__ import annotations

from assistant.errors import UserError


class MemoryNotFound(UserError):
    pass


class SecretRejected(UserError):
    pass


class NotGrounded(UserError):
    """A memory proposed by the assistant that the user never said (e.g. a document's text)."""


class ConcurrentChange(UserError):
    """The memory changed since it was read; the newer change (usually the user's) is kept."""


class NothingToUndo(UserError):
    pass
