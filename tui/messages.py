"""Typed messages that workers post to the app (thread-safe `post_message`)."""

from __future__ import annotations

from textual.message import Message

from tui.views import (
    FolderView,
    MemoryView,
    OllamaStatus,
    SearchResult,
    SourceView,
    SyncProgress,
    SyncSummary,
)


class OllamaChecked(Message):
    def __init__(self, status: OllamaStatus) -> None:
        super().__init__()
        self.status = status


class ModelLoaded(Message):
    """The embedding model and stores are ready (or failed to load: `error`)."""

    def __init__(self, error: str = "") -> None:
        super().__init__()
        self.error = error


class IdleExtracted(Message):
    """Idle-time memory extraction went through `pending` finished turns (`extracted` > 0
    when it succeeded)."""

    def __init__(self, pending: int, extracted: int) -> None:
        super().__init__()
        self.pending = pending
        self.extracted = extracted


class StatsUpdated(Message):
    def __init__(self, files: int, chunks: int, memories: int) -> None:
        super().__init__()
        self.files = files
        self.chunks = chunks
        self.memories = memories


class SyncStarted(Message):
    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label


class SyncAdvanced(Message):
    def __init__(self, progress: SyncProgress) -> None:
        super().__init__()
        self.progress = progress


class SyncFinished(Message):
    def __init__(self, summary: SyncSummary | None, error: str = "") -> None:
        super().__init__()
        self.summary = summary
        self.error = error


class FoldersLoaded(Message):
    def __init__(self, folders: list[FolderView]) -> None:
        super().__init__()
        self.folders = folders


class WatchEvent(Message):
    """Watch mode synced a change (or reports its state)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class MemoriesLoaded(Message):
    def __init__(self, memories: list[MemoryView], *, all_active: bool) -> None:
        super().__init__()
        self.memories = memories
        self.all_active = all_active


class MemoriesArrived(Message):
    """New memories from background extraction, shown with a short highlight."""

    def __init__(self, memories: list[MemoryView]) -> None:
        super().__init__()
        self.memories = memories


class SearchDone(Message):
    def __init__(self, result: SearchResult) -> None:
        super().__init__()
        self.result = result


class BackendError(Message):
    """A worker failed; `message` (and `hint`) are shown to the user."""

    def __init__(self, action: str, message: str, hint: str = "") -> None:
        super().__init__()
        self.action = action
        self.message = message
        self.hint = hint


class SourceChosen(Message):
    """A source was selected (in the pane or by a citation)."""

    def __init__(self, source: SourceView) -> None:
        super().__init__()
        self.source = source


class ChatStreamEvent(Message):
    """One event of the answer stream for the answer widget with `answer_id`."""

    def __init__(self, answer_id: str, event: object) -> None:
        super().__init__()
        self.answer_id = answer_id
        self.event = event
