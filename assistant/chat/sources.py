"""What the chat engine needs from knowledge, long-term memory and earlier conversations
(service.py adapts the real ones: HybridRetriever, MemoryService, the conversation index)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from assistant.sessions.turn import MemoryItem, Recollection, Retrieval

PROFILE_MEMORY_ID = "profile"  # assistant.memory.store.PROFILE_ID

# The blocking `(messages, options) -> reply` a CLI extraction asks the model with.
ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]


class KnowledgeSource(Protocol):
    """What the engine needs from knowledge retrieval (see service.py for the real one)."""

    def search(
        self, message: str, *, history: Sequence[str] = (), top_k: int | None = None
    ) -> Retrieval: ...


class MemorySource(Protocol):
    """What the engine needs from long-term memory (see service.py for the real one)."""

    def recall(self, query: str, k: int) -> list[MemoryItem]:
        """Candidates, most important first (profile, pinned, then the `k` most relevant);
        the prompt's memory budget decides which go in. The user's profile, if any, is the
        item with memory_id PROFILE_MEMORY_ID: it goes into the stable system message, the
        rest after the question."""
        ...

    def used(self, memory_ids: Sequence[str]) -> None:
        """The memories the prompt included (recall counts them as used)."""
        ...

    def note(self, message: str, *, session_id: str | None) -> MemoryItem | None:
        """Store an explicit "remember that …" in the user's message; None if there is none."""
        ...

    def remember(
        self, text: str, kind: str, *, session_id: str | None, said: Sequence[str] = ()
    ) -> str:
        """Store a memory the model proposes (the `remember` tool); returns a one-line
        confirmation. It must be grounded in `said`, the user's messages of this conversation:
        otherwise (or for a secret) a UserError says why it was refused."""
        ...

    def extract(self, exchanges: Sequence[tuple[str, str]], *, session_id: str,
                chat: ChatFn | None = None) -> None:
        """Run long-term memory extraction over (question, answer) pairs, asking the model
        through `chat` (the engine's cancellable background call) when given."""
        ...


class ConversationSource(Protocol):
    """What the engine needs from the user's earlier conversations (service.py: the real one
    over the conversation index)."""

    def recall(self, message: str, *, session_id: str | None, top_k: int) -> Recollection:
        """Earlier turns relevant to `message`, best first, never from `session_id` (the
        conversation being had, whose turns the prompt shows anyway); a time phrase in the
        message ("last week", "上周") narrows the dates."""
        ...

    def search(self, query: str, *, since: str | None, until: str | None,
               session_id: str | None, top_k: int) -> Recollection:
        """The `search_conversations` tool: `since`/`until` as `--since/--until` take them (a
        UserError for one it cannot read)."""
        ...

    def index(self, session_id: str) -> None:
        """Index what changed in this session (its new turn, a new summary) now."""
        ...

