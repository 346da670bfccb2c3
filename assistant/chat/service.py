"""Wiring the chat engine to the app: `open_chat(ctx, stores)`.

Adapters from the real retrieval (`HybridRetriever`), memory (`MemoryService`) and conversation
index (`ConversationIndex`) to the engine's small protocols. The stores are the composition
root's (`Services.chat` / `Services.open_chat`: each opened once per process, shared with the
rest of the UI, closed by it); each is opened lazily, on the engine's worker thread, at the
first turn that needs it: `brain ask --no-knowledge` never loads the embedding model for
knowledge, and the TUI paints before anything heavy is imported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant.chat.calibration import TokenCalibration
from assistant.chat.engine import ChatEngine, ChatFn, EngineSettings
from assistant.context import AppContext
from assistant.llm.provider import Link, make_catalog
from assistant.memory.model import Memory, RecalledMemory, parse_type
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import (
    HitScores,
    KnowledgeItem,
    MemoryItem,
    Recollection,
    Retrieval,
)
from indexing.lazy import Lazy

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex
    from assistant.memory.service import MemoryService
    from assistant.retrieval.hit import SearchHit
    from assistant.retrieval.hybrid import HybridRetriever

log = logging.getLogger(__name__)


def item_from_hit(hit: SearchHit) -> KnowledgeItem:
    chunk = hit.chunk
    return KnowledgeItem(
        chunk_id=chunk.id,
        text=chunk.text,
        source=chunk.source,
        relpath=chunk.relpath,
        heading=chunk.heading,
        score=hit.score,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        page=chunk.page,
        end_page=chunk.last_page,
        scores=HitScores(
            rank=hit.rank, vector=hit.cosine, keyword=hit.keyword, fused=hit.fused,
            recency_boost=hit.recency_boost, more_from_file=hit.more_from_file,
        ),
    )


def item_from_memory(recalled: RecalledMemory) -> MemoryItem:
    return memory_item(recalled.memory, recalled.score)


def memory_item(memory: Memory, score: float) -> MemoryItem:
    return MemoryItem(memory.id, memory.text, memory.type.value, score, memory=memory)


class RetrieverKnowledge:
    """KnowledgeSource over HybridRetriever, opened on first use by its owner's opener (which
    closes it: `Services`)."""

    def __init__(self, open_retriever: Callable[[], HybridRetriever]) -> None:
        self._retriever = Lazy(open_retriever)

    def retriever(self) -> HybridRetriever:
        return self._retriever.get()

    def warm_up(self) -> None:
        """Open the index and load the embedding model (one query embedded)."""
        self.retriever().embedder.embed_query("warm up")

    def search(
        self, message: str, *, history: Sequence[str] = (), top_k: int | None = None
    ) -> Retrieval:
        retriever = self.retriever()
        _files, chunks = retriever.kb.stats()
        if chunks == 0:
            # Chatting before indexing anything is fine: there is just no knowledge.
            return Retrieval(message, (), low_confidence=True, timings={}, empty_index=True)
        result = retriever.search(message, top_k=top_k, history=history)
        return Retrieval(
            result.search_query or result.query,
            tuple(item_from_hit(h) for h in result.hits),
            result.low_confidence,
            dict(result.timings),
            log_id=result.log_id,
            warnings=result.warnings,
        )


class ServiceMemory:
    """MemorySource over MemoryService, opened on first use by its owner's opener (which
    closes it: `Services`)."""

    def __init__(self, open_service: Callable[[], MemoryService]) -> None:
        self._service = Lazy(open_service)

    def service(self) -> MemoryService:
        return self._service.get()

    def warm_up(self) -> None:
        self.service()

    def recall(self, query: str, k: int) -> list[MemoryItem]:
        return [item_from_memory(r) for r in self.service().recall(query, top_k=k)]

    def used(self, memory_ids: Sequence[str]) -> None:
        self.service().mark_used(memory_ids)

    def note(self, message: str, *, session_id: str | None) -> MemoryItem | None:
        """Store an explicit "remember that …" from the user's message."""
        memory = self.service().remember(message, session_id=session_id, source="chat")
        return None if memory is None else memory_item(memory, 1.0)

    def remember(
        self, text: str, kind: str, *, session_id: str | None, said: Sequence[str] = ()
    ) -> str:
        """The `remember` tool; refusals (secret, not said by the user) raise a UserError."""
        outcome = self.service().remember_proposed(
            text, type=parse_type(kind), said=said, session_id=session_id, source="chat-tool"
        )
        if outcome.memory is None:
            return f"not remembered (changed meanwhile): {text}"
        if not outcome.stored:
            return f"already known: {outcome.memory.text}"
        return f"Remembered ({outcome.memory.type.value}): {outcome.memory.text}"

    def extract(self, exchanges: Sequence[tuple[str, str]], *, session_id: str,
                chat: ChatFn | None = None) -> None:
        outcome = self.service().extract([q for q, _a in exchanges], session_id=session_id,
                                         chat_fn=chat)
        if outcome.error:
            raise RuntimeError(outcome.error)


# How long a question may wait for the conversation index to catch up with turns stored
# without it (by an older release, or a process that quit before indexing): the rest is
# indexed after the answer (`index`) or at the next start (`warm_up`).
CATCH_UP_SECONDS = 2.0


class IndexConversations:
    """ConversationSource over the conversation index, opened on first use. The index lives
    in the sessions database: it shares the engine's SessionStore (its lock and connection)."""

    def __init__(self, open_index: Callable[[], ConversationIndex]) -> None:
        self._index = Lazy(open_index)
        self._caught_up = False

    def warm_up(self) -> None:
        """Open the index and index every turn it lacks (the TUI at start)."""
        self._caught_up = self._index.get().sync().complete

    def _ready(self) -> ConversationIndex:
        index = self._index.get()
        if not self._caught_up:
            deadline = time.monotonic() + CATCH_UP_SECONDS
            self._caught_up = index.sync(deadline=deadline).complete
        return index

    def recall(self, message: str, *, session_id: str | None, top_k: int) -> Recollection:
        from assistant.conversations.recall import recall_for_chat

        return recall_for_chat(self._ready(), message, exclude_session=session_id, top_k=top_k)

    def search(self, query: str, *, since: str | None, until: str | None,
               session_id: str | None, top_k: int) -> Recollection:
        from assistant.conversations.recall import search_for_tool

        return search_for_tool(self._ready(), query, since=since, until=until,
                               exclude_session=session_id, top_k=top_k)

    def index(self, session_id: str) -> None:
        index = self._index.get()
        if self._caught_up:
            index.refresh(session_id)
        else:
            self._caught_up = index.sync(deadline=time.monotonic() + CATCH_UP_SECONDS).complete


@dataclass(frozen=True, slots=True)
class ChatStores:
    """What a chat works over, opened and closed by its owner (`Services`, which opens each
    once per process): the session store, and openers for the rest, called on first use on the
    engine's threads."""

    sessions: SessionStore
    retriever: Callable[[], HybridRetriever]
    memory: Callable[[], MemoryService]
    conversations: Callable[[], ConversationIndex]


class ChatService:
    """An engine and the sources it was given; close it when done (its stores stay open:
    they are its owner's)."""

    def __init__(
        self,
        engine: ChatEngine,
        store: SessionStore,
        knowledge: RetrieverKnowledge | None,
        memory: ServiceMemory | None,
        conversations: IndexConversations | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.knowledge = knowledge
        self.memory = memory
        self.conversations = conversations

    async def aclose(self, *, patience: float | None = None) -> None:
        """Close the engine: its background work, its connections to the model server and
        its threads, waiting at most `patience` seconds (see ChatEngine.aclose)."""
        await self.engine.aclose(patience=patience)


def open_chat(
    ctx: AppContext,
    stores: ChatStores,
    *,
    session_id: str | None = None,
    knowledge: bool = True,
    memory: bool | None = None,
) -> ChatService:
    """The chat engine for `ctx` over `stores`: config, the sessions, retrieval and memory.

    `session_id` resumes a session (id or unique prefix); otherwise the first message starts a
    new one. `memory=None` follows memory.enabled.
    """
    store = stores.sessions
    resolved = store.resolve(session_id).id if session_id else None
    knowledge_source = RetrieverKnowledge(stores.retriever) if knowledge else None
    memory_source: ServiceMemory | None = None
    if memory if memory is not None else ctx.config.memory.enabled:
        memory_source = ServiceMemory(stores.memory)
    conversation_source: IndexConversations | None = None
    if memory_source is not None and ctx.config.chat.recall_top_k > 0:
        # The user's earlier words, like memories: recalled only when memory is on.
        conversation_source = IndexConversations(stores.conversations)
    settings = EngineSettings.from_config(ctx.config)
    engine = ChatEngine(
        settings,
        store,
        knowledge=knowledge_source,
        memory=memory_source,
        catalog=make_catalog(Link(settings.provider, settings.host, settings.api_key_env,
                                  settings.api_key_file), settings.timeout),
        session_id=resolved,
        conversations=conversation_source,
        calibration=TokenCalibration(ctx.paths.token_calibration_file),
    )
    return ChatService(engine, store, knowledge_source, memory_source, conversation_source)
