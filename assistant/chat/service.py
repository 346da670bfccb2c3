"""Wiring the chat engine to the app: `open_chat(ctx)`.

Adapters from the real retrieval (`HybridRetriever`), memory (`MemoryService`) and conversation
index (`ConversationIndex`) to the engine's small protocols. Each opens lazily, on its worker
thread, at the first turn that needs it: `brain ask --no-knowledge` never loads the embedding
model for knowledge, and the TUI paints before anything heavy is imported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from assistant.chat.calibration import TokenCalibration
from assistant.chat.engine import ChatEngine, ChatFn, EngineSettings
from assistant.context import AppContext
from assistant.errors import UserError
from assistant.llm.provider import Link, make_catalog
from assistant.sessions.service import open_sessions
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
    import numpy as np

    from assistant.conversations.index import ConversationIndex
    from assistant.memory.model import Memory, RecalledMemory
    from assistant.memory.service import MemoryService
    from assistant.retrieval.hit import SearchHit
    from assistant.retrieval.hybrid import HybridRetriever
    from indexing.embedder import Embedder

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
    """KnowledgeSource over HybridRetriever, opened on first use."""

    def __init__(self, open_retriever: Callable[[], HybridRetriever]) -> None:
        self._retriever = Lazy(open_retriever, close=_close_retriever)

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

    def close(self) -> None:
        self._retriever.close()


def _close_retriever(retriever: HybridRetriever) -> None:
    from assistant.retrieval.open import close_retriever

    close_retriever(retriever)


class ServiceMemory:
    """MemorySource over MemoryService, opened on first use."""

    def __init__(self, open_service: Callable[[], MemoryService]) -> None:
        self._service = Lazy(open_service, close=lambda service: service.close())

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
        from assistant.memory.model import parse_type

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

    def close(self) -> None:
        self._service.close()


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


class SingleFlightEmbedder:
    """The app's embedder, with concurrent `embed_query` calls for the same text merged.

    Knowledge retrieval and memory recall run at the same time and usually embed the same
    question: without this, both miss the embedder's query memo and the model runs twice, one
    after the other (it is not re-entrant) — a second embedding on every turn's critical path.
    """

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[np.ndarray]] = {}
        self.merged = 0  # calls served by another caller's embedding

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed_documents(texts)

    def __getattr__(self, name: str) -> Any:
        # Beyond the Embedder protocol: the cache's counters and `cached(text)`, for benches.
        return getattr(self._inner, name)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            pending = self._inflight.get(text)
            if pending is None:
                pending = self._inflight[text] = Future()
                owner = True
            else:
                owner = False
                self.merged += 1
        if not owner:
            return pending.result()
        try:
            vector = self._inner.embed_query(text)
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._inflight.pop(text, None)
        pending.set_result(vector)
        return vector


class _ChatContext(AppContext):
    """The AppContext as the chat's retriever and memory see it: the same paths, config and
    embedding model, the latter behind a SingleFlightEmbedder (loaded on first use)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(paths=ctx.paths, config=ctx.config)
        self._shared = Lazy(lambda: SingleFlightEmbedder(ctx.embedder()))

    def embedder(self) -> Embedder:
        return self._shared.get()


class ChatService:
    """An engine plus the stores it opened; close it when done."""

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
        """Close the engine and what it uses: knowledge, memory and the session store, each on
        the thread that uses it, waiting at most `patience` seconds (see ChatEngine.aclose)."""
        await self.engine.aclose(patience=patience, then=self.store.close)


def open_chat(
    ctx: AppContext,
    *,
    session_id: str | None = None,
    knowledge: bool = True,
    memory: bool | None = None,
    origin: str = "chat",
) -> ChatService:
    """The chat engine for `ctx`: config, the session store, retrieval and memory.

    `session_id` resumes a session (id or unique prefix); otherwise the first message starts a
    new one. `memory=None` follows memory.enabled.
    """
    store = open_sessions(ctx)
    shared = _ChatContext(ctx)
    try:
        resolved = store.resolve(session_id).id if session_id else None
    except UserError:
        store.close()
        raise
    knowledge_source: RetrieverKnowledge | None = None
    if knowledge:
        def make_retriever() -> HybridRetriever:
            from assistant.retrieval.open import open_retriever

            return open_retriever(shared, origin=origin)

        knowledge_source = RetrieverKnowledge(make_retriever)
    memory_source: ServiceMemory | None = None
    if memory if memory is not None else ctx.config.memory.enabled:
        def make_memory() -> MemoryService:
            from assistant.memory.service import MemoryService

            return MemoryService.open(shared)

        memory_source = ServiceMemory(make_memory)
    conversation_source: IndexConversations | None = None
    if memory_source is not None and ctx.config.chat.recall_top_k > 0:
        # The user's earlier words, like memories: recalled only when memory is on.
        def make_index() -> ConversationIndex:
            from assistant.conversations.service import open_conversations

            return open_conversations(shared, store)

        conversation_source = IndexConversations(make_index)
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
