"""The event log as the CLI, the MCP server and the TUI use it: the store, the embedding
model loaded on first use (never at start-up), and search with the configured weights."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.events.matrix import NO_FILTERS, EventMatrix, Filters
from assistant.events.model import EventHit
from assistant.events.search import search_events, weights_from
from assistant.events.store import EventStore
from indexing.lazy import Lazy

if TYPE_CHECKING:
    from indexing.embedder import Embedder

EMBED_BATCH = 64
# A search by meaning first embeds the events still without a vector when there are at most
# this many (what an agent just logged, found by meaning at once). A larger backlog (a burst
# of logging) is left to the idle work (mcp/background.py), so no search turns into a bulk
# job; its events are found by their words meanwhile (search.py).
EMBED_BEFORE_SEARCH = 16


class EventService:
    def __init__(self, ctx: AppContext, store: EventStore,
                 embedder: Embedder | None = None) -> None:
        self.ctx = ctx
        self.store = store
        self._embedder = Lazy(lambda: self._private_embedder() if embedder is None else embedder)
        self._matrix = Lazy(self._open_matrix)

    @classmethod
    def open(cls, ctx: AppContext, *, embedder: Embedder | None = None) -> EventService:
        ctx.paths.ensure()
        return cls(ctx, EventStore.open(ctx.paths.events_db), embedder)

    def close(self) -> None:
        self.store.close()

    def embedder(self) -> Embedder:
        return self._embedder.get()

    def _private_embedder(self) -> Embedder:
        from assistant.private_embedding import PrivateEmbedder

        # Events are the user's private record: their vectors never reach the cache.
        return PrivateEmbedder(self.ctx.embedder())

    def matrix(self) -> EventMatrix:
        return self._matrix.get()

    def _open_matrix(self) -> EventMatrix:
        embedder = self.embedder()
        return EventMatrix(self.store, embedder.model_id, embedder.dimension)

    def embed_pending(self, *, limit: int | None = None) -> int:
        """Embed events that have no vector yet (oldest first); returns how many."""
        embedder = self.embedder()
        done = 0
        while limit is None or done < limit:
            take = EMBED_BATCH if limit is None else min(EMBED_BATCH, limit - done)
            batch = self.store.pending(take, model_id=embedder.model_id)
            if not batch:
                break
            vectors = embedder.embed_documents([text for _, text in batch])
            self.store.store_vectors(embedder.model_id, {
                event_id: vectors[i] for i, (event_id, _) in enumerate(batch)})
            done += len(batch)
        return done

    def _embed_few_pending(self) -> None:
        embedder = self.embedder()
        batch = self.store.pending(EMBED_BEFORE_SEARCH + 1, model_id=embedder.model_id,
                                   newest_first=True, stale=False)
        if batch and len(batch) <= EMBED_BEFORE_SEARCH:
            vectors = embedder.embed_documents([text for _, text in batch])
            self.store.store_vectors(embedder.model_id, {
                event_id: vectors[i] for i, (event_id, _) in enumerate(batch)})

    def search(self, query: str | None, *, filters: Filters = NO_FILTERS,
               top_k: int = 10, meaning: bool = True) -> list[EventHit]:
        """`meaning`: use the embedding model (False: words, time, type, importance only)."""
        use_model = meaning and bool((query or "").strip())
        if use_model:
            self._embed_few_pending()
        return search_events(
            self.store, query, filters=filters, top_k=top_k,
            weights=weights_from(self.ctx.config.events),
            embedder=self.embedder() if use_model else None,
            matrix=self.matrix() if use_model else None,
        )
