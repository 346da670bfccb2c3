"""The interface the UI needs from the core, one protocol per domain.

Knowledge, memory, sessions and Ollama methods block: the UI calls them from worker threads
(tui/workers.py), never on the event loop. The chat is async and runs on the UI's loop (one
road for a turn: see tui/backend/chat.py). Failures the user can act on are `HintedError`s
(message + hint); the UI shows them and keeps everything the user typed.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from tui.views import (
    ChatEvent,
    ConversationSearch,
    EventView,
    FolderView,
    MemoryChanges,
    MemoryEvent,
    MemoryView,
    ModelView,
    OllamaStatus,
    SearchResult,
    SessionView,
    SyncProgress,
    SyncSummary,
    TurnView,
)


class OllamaApi(Protocol):
    def status(self, model: str) -> OllamaStatus: ...
    def server_name(self) -> str:
        """How messages name the configured server: "Ollama" or "the model server"."""
    def models(self) -> list[ModelView]: ...


class KnowledgeApi(Protocol):
    def warm_up(self) -> None:
        """Load the embedding model and open the stores (slow: seconds)."""

    def stats(self) -> tuple[int, int]: ...
    def folders(self) -> list[FolderView]: ...
    def add_folder(self, path: Path) -> FolderView: ...
    def remove_folder(self, path: str) -> None: ...
    def sync(
        self,
        folders: Sequence[str] | None,
        *,
        rebuild: bool,
        progress: Callable[[SyncProgress], None],
    ) -> SyncSummary: ...
    def search(self, query: str) -> SearchResult: ...
    def watch(self, on_change: Callable[[str], None], stop: threading.Event) -> None:
        """Block, syncing changed folders live, until `stop` is set."""


class MemoryApi(Protocol):
    def list(self, *, all_active: bool, type_: str | None, query: str) -> list[MemoryView]: ...
    def count(self) -> int: ...
    def add(self, text: str, type_: str) -> MemoryView: ...
    def edit(self, memory_id: str, text: str) -> MemoryView: ...
    def delete(self, memory_id: str) -> MemoryView:
        """The memory as deleted (its `version` is what `undo` checks)."""

    def pin(self, memory_id: str, pinned: bool) -> MemoryView: ...
    def undo(self, memory_id: str, *, expected_version: int) -> MemoryView:
        """Take back the change that gave the memory `expected_version`, and only that one:
        when anything changed the memory since, nothing is undone (a `HintedError` says so)."""

    def current(self, ids: Sequence[str]) -> builtins.list[MemoryView]:
        """The memories `ids` as stored now (any status; unknown ids left out), in that order."""

    def history(self, memory_id: str) -> builtins.list[MemoryEvent]: ...
    def forget_all(self) -> int: ...
    def changes(self, version: int, stamp: float | None) -> MemoryChanges | None:
        """None while the store is at `version` (cheap: meant for a timer); otherwise the new
        version, the count, and what extraction added after `stamp` (nothing when `stamp` is
        None: the first look only learns where things stand)."""


class ChatTurn(Protocol):
    """One answer being written: its events in order (`Retrieved`; `Waiting` while Ollama
    loads the model and reads the prompt; `Thinking`, `Token`s and `Replaced` as they come;
    then `Finished` or `Failed`), and `cancel()`, after which it ends promptly with
    `Finished(interrupted)` whatever the phase (loading, reading, thinking, answering)."""

    def __aiter__(self) -> AsyncIterator[ChatEvent]: ...
    def cancel(self) -> None: ...


class ChatApi(Protocol):
    async def warm_up(self) -> None:
        """Import the LLM client, ask Ollama about the model, open stores (slow)."""

    async def ask(self, session_id: str | None, text: str, *, model: str) -> ChatTurn: ...
    async def preload(self, session_id: str | None, model: str) -> float:
        """Load `model` in Ollama the way the turns will use it (same num_ctx, keep_alive);
        the seconds it took. Slow (minutes on a CPU): a worker, cancellable."""

    def feedback(self, log_id: str, rating: int) -> None:
        """Blocking (a worker thread)."""

    async def configure(self, changes: dict[str, Any]) -> None:
        """Change chat settings for the following turns (`live_settings.live_changes`)."""

    async def pending_extraction(self) -> int:
        """How many turns memory extraction has not read yet, this run's and those an
        earlier run left (quitting does not extract)."""

    def mark_right_source(self, log_id: str, path: str) -> None:
        """👎 the logged retrieval and name `path` as a file that answers it (an eval case for
        `brain log --disliked --export`). Blocking."""

    async def extract_pending(self) -> int:
        """Memory extraction over those turns (the app calls it when the user has been
        idle); how many turns it went through."""

    async def close(self) -> None:
        """Quitting: cancel background work and close, promptly (no memory extraction)."""


class SessionsApi(Protocol):
    def list(self) -> list[SessionView]: ...
    def create(self) -> SessionView: ...
    def turns(self, session_id: str) -> builtins.list[TurnView]: ...
    def rename(self, session_id: str, title: str) -> None: ...
    def delete(self, session_id: str) -> None: ...
    def export_markdown(self, session_id: str, path: Path) -> Path: ...
    def search(self, text: str) -> ConversationSearch:
        """Every past conversation by meaning, words and dates (phrases such as "last week",
        or `since:7d` / `until:2026-03-01`); blocking."""


class EventsApi(Protocol):
    """The agent event log (blocking)."""

    def list(self) -> list[EventView]: ...
    def search(self, text: str) -> builtins.list[EventView]:
        """Events by meaning and words, blended with importance and recency."""
    def remove(self, event_id: str) -> int:
        """Erase an event for good (and summaries written from it); how many went."""
    def version(self) -> int:
        """Grows whenever the log changes, in any process (the screen polls it)."""
    def summarize_due(self) -> int:
        """Summarise the runs that are due with the chat model; how many summaries."""


class Backend(Protocol):
    @property
    def ollama(self) -> OllamaApi: ...
    @property
    def knowledge(self) -> KnowledgeApi: ...
    @property
    def memory(self) -> MemoryApi: ...
    @property
    def chat(self) -> ChatApi: ...
    @property
    def sessions(self) -> SessionsApi: ...
    @property
    def events(self) -> EventsApi: ...
