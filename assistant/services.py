"""`Services`: each store and service of one `brain` process, opened at most once, lazily.

The one composition root above the subsystems. `AppContext` (paths, config, the embedding model)
is what every subsystem takes and so sits below them all; `Services` sits above them: it calls
their `open_*` functions, once each, on first use, and hands the opened objects down to the UIs
(the TUI's adapters, the CLI commands). Nothing below it opens a sibling's store, and nothing
that takes a `Services` opens one of its own.

Every opener goes through `indexing.lazy.Lazy`: the TUI's worker threads may ask at once and
share one instance; a failed open raises to that caller and is tried again by the next.
`close()` closes what was opened, in the reverse order of opening (the conversation index after
nothing it depends on: the session store it reads is closed after it). Modules are imported
inside the openers: building a `Services` is cheap and loads nothing heavy.

The chat works over these same stores (`chat()`, `open_chat()`): one session store, memory
store and index per process, whoever asks. Every store sees the embedding model through one
`SingleFlightEmbedder` (shared_embedder.py): a turn's concurrent searches embed its question
once.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from assistant.context import AppContext
from indexing.lazy import Lazy

if TYPE_CHECKING:
    from assistant.chat.service import ChatService
    from assistant.conversations.index import ConversationIndex
    from assistant.events.service import EventService
    from assistant.llm.provider import Link
    from assistant.memory.service import MemoryService
    from assistant.memory.store import MemoryStore
    from assistant.retrieval.hybrid import HybridRetriever
    from assistant.retrieval.log import RetrievalLog
    from assistant.sessions.store import SessionStore
    from assistant.shared_embedder import SingleFlightContext
    from indexing.knowledge import KnowledgeBase

log = logging.getLogger(__name__)

T = TypeVar("T")


class Services:
    """The opened core of one process; `origin` tags its searches in the retrieval log, which
    `log_searches=False` leaves unopened (`brain eval`: its searches are measurements);
    `eager_memory_vectors=False` makes memory writes only queue their vectors (`brain memory`
    never waits for the embedding model; the next search catches up)."""

    def __init__(self, ctx: AppContext, *, origin: str = "cli",
                 log_searches: bool = True, eager_memory_vectors: bool = True) -> None:
        self.ctx = ctx
        self.origin = origin
        self.log_searches = log_searches
        self.eager_memory_vectors = eager_memory_vectors
        # Opens by name, for tests and start-up walks: each must stay at 1.
        self.opened: Counter[str] = Counter()
        self._order: list[Callable[[], None]] = []  # closers in the order opened
        self._order_lock = threading.Lock()
        # What the stores open with: `ctx` behind one single-flight embedder.
        self._stores_ctx: Lazy[SingleFlightContext] = Lazy(self._open_stores_ctx)
        self._link: Lazy[Link] = self._lazy("link", self._open_link)
        self._sessions: Lazy[SessionStore] = self._lazy(
            "sessions", self._open_sessions, lambda store: store.close())
        self._memory: Lazy[MemoryStore] = self._lazy(
            "memory", self._open_memory, lambda store: store.close())
        # Over memory(): closing the store is memory's, the service holds nothing else.
        self._memory_service: Lazy[MemoryService] = self._lazy(
            "memory_service", self._open_memory_service)
        self._conversations: Lazy[ConversationIndex] = self._lazy(
            "conversations", self._open_conversations)
        self._retrieval_log: Lazy[RetrievalLog] = self._lazy(
            "retrieval_log", self._open_retrieval_log, lambda log: log.close())
        self._events: Lazy[EventService] = self._lazy(
            "events", self._open_events, lambda service: service.close())
        self._retriever: Lazy[HybridRetriever] = self._lazy(
            "retriever", self._open_retriever, _close_retriever)
        self._writer: Lazy[KnowledgeBase] = self._lazy(
            "knowledge", lambda: self._open_knowledge(True), lambda kb: kb.close())
        self._light: Lazy[KnowledgeBase] = self._lazy(
            "knowledge_light", lambda: self._open_knowledge(False), lambda kb: kb.close())
        self._chat: Lazy[ChatService] = self._lazy("chat", self._new_chat)

    def _lazy(self, name: str, open: Callable[[], T],
              close: Callable[[T], object] | None = None) -> Lazy[T]:
        holder: list[Lazy[T]] = []

        def counted() -> T:
            value = open()
            self.opened[name] += 1
            with self._order_lock:
                self._order.append(holder[0].close)
            return value

        lazy = Lazy(counted, close=close)
        holder.append(lazy)
        return lazy

    # What the UIs use. Each opens on first call and returns the same object afterwards.

    def link(self) -> Link:
        """The configured LLM server ([llm] / [ollama])."""
        return self._link.get()

    def sessions(self) -> SessionStore:
        return self._sessions.get()

    def memory(self) -> MemoryStore:
        return self._memory.get()

    def memory_service(self) -> MemoryService:
        """Recall, search and the assistant's proposals over `memory()` (the same store)."""
        return self._memory_service.get()

    def conversations(self) -> ConversationIndex:
        """The conversation index, over `sessions()` (the same database, one connection)."""
        return self._conversations.get()

    def events(self) -> EventService:
        return self._events.get()

    def peek_events(self) -> EventService | None:
        """The events service if it was opened, without opening it."""
        return self._events.peek()

    def retriever(self) -> HybridRetriever:
        """Search: the knowledge base with the model, the wrong-model check and the log."""
        return self._retriever.get()

    def retrieval_log(self) -> RetrievalLog:
        """The retrieval log (created if missing): the one the retriever appends to, for
        feedback, the turns' logged scores, `brain log` and erasure."""
        return self._retrieval_log.get()

    def knowledge(self) -> KnowledgeBase:
        """The index with the embedding model (writes: add, sync): the retriever's when it is
        open, else one of its own (the retriever refuses an index built with another model,
        which only a sync can fix)."""
        return self._retrievers_kb() or self._writer.get()

    def light_knowledge(self) -> KnowledgeBase:
        """The index without the embedding model: listing works even when it cannot load."""
        return self._retrievers_kb() or self._writer.peek() or self._light.get()

    def chat(self) -> ChatService:
        """The chat engine over these stores (`sessions()`, `retriever()`, `memory_service()`,
        `conversations()`, each opened on the first turn that needs it). Closing the engine
        is `ChatService.aclose`, async, which `close()` leaves to its owner; the stores are
        closed by `close()`."""
        return self._chat.get()

    def open_chat(self, *, session_id: str | None = None, knowledge: bool = True,
                  memory: bool | None = None) -> ChatService:
        """A chat of the caller's own (it `aclose`s it) over these stores: `brain ask`'s, with
        its session and switches (see `assistant.chat.service.open_chat`)."""
        self.opened["chat_separate"] += 1
        return self._new_chat(session_id=session_id, knowledge=knowledge, memory=memory)

    def peek_chat(self) -> ChatService | None:
        """The chat if it was opened, without opening it."""
        return self._chat.peek()

    def take_chat(self) -> ChatService | None:
        """The opened chat (None if none), handed to a caller that closes it (async: the
        engine's threads and connections; the stores stay open here); the next `chat()`
        opens a new one."""
        chat, self._chat = self._chat.peek(), self._lazy("chat", self._new_chat)
        return chat

    def separate_knowledge(self) -> KnowledgeBase:
        """A knowledge base of its own, for the caller to close: the folder watcher's long
        syncs must not hold up searches on the shared connection."""
        self.opened["knowledge_separate"] += 1
        return self._open_knowledge(True)

    def close(self) -> None:
        """Close everything opened, the last opened first; a failure is logged and the rest
        still closed (closing must reach every store)."""
        with self._order_lock:
            order, self._order = self._order, []
        for close in reversed(order):
            try:
                close()
            except Exception:
                log.exception("closing a store failed")

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _retrievers_kb(self) -> KnowledgeBase | None:
        from indexing.knowledge import KnowledgeBase

        retriever = self._retriever.peek()
        kb = retriever.kb if retriever is not None else None
        return kb if isinstance(kb, KnowledgeBase) else None

    # Openers: imports inside, this module is imported before the TUI's first frame.

    def _open_link(self) -> Link:
        from assistant.llm.provider import link

        return link(self.ctx.config)

    def _open_stores_ctx(self) -> SingleFlightContext:
        from assistant.shared_embedder import SingleFlightContext

        return SingleFlightContext(self.ctx)

    def _open_sessions(self) -> SessionStore:
        from assistant.sessions.service import open_sessions

        return open_sessions(self.ctx)

    def _open_memory(self) -> MemoryStore:
        from assistant.memory.service import open_memory

        return open_memory(self._stores_ctx.get(), eager_vectors=self.eager_memory_vectors)

    def _open_memory_service(self) -> MemoryService:
        from assistant.memory.service import MemoryService

        return MemoryService.open(self._stores_ctx.get(), store=self.memory())

    def _open_conversations(self) -> ConversationIndex:
        from assistant.conversations.service import open_conversations

        return open_conversations(self._stores_ctx.get(), self.sessions())

    def _open_events(self) -> EventService:
        from assistant.events.service import EventService

        return EventService.open(self.ctx)

    def _open_retrieval_log(self) -> RetrievalLog:
        from assistant.retrieval.log import RetrievalLog

        return RetrievalLog.open(self.ctx.paths.retrieval_log_db)

    def _open_retriever(self) -> HybridRetriever:
        from assistant.retrieval.open import open_retriever
        from indexing.filesystem import can_write

        # On a home this process may only read, the search is answered and not logged.
        logged = self.log_searches and can_write(self.ctx.paths.retrieval_log_db.parent)
        return open_retriever(self._stores_ctx.get(), origin=self.origin,
                              log=self.retrieval_log() if logged else None)

    def _open_knowledge(self, with_embedder: bool) -> KnowledgeBase:
        from assistant.knowledge_service import open_knowledge

        return open_knowledge(self._stores_ctx.get(), with_embedder=with_embedder)

    def _new_chat(self, *, session_id: str | None = None, knowledge: bool = True,
                  memory: bool | None = None) -> ChatService:
        from assistant.chat.service import ChatStores, open_chat

        stores = ChatStores(self.sessions(), self.retriever, self.memory_service,
                            self.conversations)
        return open_chat(self.ctx, stores, session_id=session_id, knowledge=knowledge,
                         memory=memory)


def _close_retriever(retriever: HybridRetriever) -> None:
    from assistant.retrieval.open import close_retriever

    close_retriever(retriever)
