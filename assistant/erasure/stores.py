"""What a removal erases in: the caller's opened stores (`assistant.services.Services` is one).

Erasure opens no store of its own: the removal and every trace eraser use the process's, so a
removal in the TUI goes through the connections the screens read, and a removal finished at
start-up (`finish_pending`) through the command's. A protocol, not `Services` itself: the
composition root sits above every subsystem, erasure among them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from assistant.context import AppContext
    from assistant.conversations.index import ConversationIndex
    from assistant.events.service import EventService
    from assistant.memory.store import MemoryStore
    from assistant.retrieval.log import RetrievalLog
    from assistant.sessions.store import SessionStore
    from indexing.knowledge import KnowledgeBase


class Stores(Protocol):
    """Each store opened on first call and the same one afterwards; the caller closes them."""

    @property
    def ctx(self) -> AppContext: ...

    def sessions(self) -> SessionStore: ...

    def memory(self) -> MemoryStore: ...

    def conversations(self) -> ConversationIndex: ...

    def events(self) -> EventService: ...

    def retrieval_log(self) -> RetrievalLog: ...

    def light_knowledge(self) -> KnowledgeBase: ...
