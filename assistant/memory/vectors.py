"""The memories' vectors: a derived index of the active rows, caught up from SQLite.

Vectors live in the Chroma collection `memories`; a row's `vec_state` says whether its vector
must be (re)written (`pending`) or removed (`stale`), and `sync()` catches Chroma up, so a crash
between a commit and its vector write never leaves them inconsistent for long, and `rebuild()`
recreates the collection from SQLite alone. Only active memories are indexed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from assistant.memory.database import MemoryDatabase
from assistant.memory.document import embedding_text
from assistant.memory.model import Memory, MemoryStatus
from assistant.memory.rows import get_many

if TYPE_CHECKING:
    from indexing.embedder import Embedder


class VectorIndex(Protocol):
    """The part of `indexing.vectors.VectorStore` the memory store uses."""

    def upsert(
        self, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[dict[str, Any]]
    ) -> None: ...
    def delete(self, ids: Sequence[str]) -> None: ...
    def query(
        self, embedding: np.ndarray, k: int, *, where: dict[str, Any] | None = None
    ) -> list[tuple[str, float]]: ...
    def ids(self) -> list[str]: ...
    def count(self) -> int: ...
    def drop(self) -> None: ...
    def compact(self) -> int: ...
    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...


class VectorSync:
    """The embedding model and the collection, both opened at first use, and the rows'
    `vec_state` that says what the collection still lacks."""

    def __init__(self, db: MemoryDatabase, *, embedder: Callable[[], Embedder],
                 vectors: Callable[[], VectorIndex]) -> None:
        self._db = db
        self._embedder_factory = embedder
        self._vectors_factory = vectors
        self._embedder: Embedder | None = None
        self._vectors: VectorIndex | None = None

    def embedder(self) -> Embedder:
        with self._db.lock:
            if self._embedder is None:
                self._embedder = self._embedder_factory()
            return self._embedder

    def index(self) -> VectorIndex:
        with self._db.lock:
            if self._vectors is None:
                vectors = self._vectors_factory()
                if vectors.count() == 0:
                    # A new or recreated collection (first run, model change, deleted folder):
                    # every active memory needs its vector again.
                    with self._db.write() as conn:
                        conn.execute(
                            "UPDATE memories SET vec_state='pending' WHERE status=? AND "
                            "vec_state='ok'", (MemoryStatus.ACTIVE.value,))
                self._vectors = vectors
            return self._vectors

    def drop(self) -> None:
        """Drop the collection; the next use opens (and so re-creates) it."""
        with self._db.lock:
            self.index().drop()
            self._vectors = None

    def upsert_vectors(self, memories: Sequence[Memory], vectors: np.ndarray) -> None:
        self.index().upsert(
            [m.id for m in memories], vectors, [{"type": m.type.value} for m in memories]
        )
        with self._db.write() as conn:
            conn.executemany(
                "UPDATE memories SET vec_state='ok' WHERE id=? AND status=?",
                [(m.id, MemoryStatus.ACTIVE.value) for m in memories],
            )

    def sync(self, batch_size: int = 256) -> int:
        """Write pending vectors and remove stale ones; returns how many rows were fixed."""
        db = self._db
        # `vec_state != 'ok'` repeats the partial index's condition so SQLite may use it: without
        # it both reads scanned the table on every search (9 ms at 10k memories; issue 25).
        with db.lock:
            stale = [r[0] for r in db.conn.execute(
                "SELECT id FROM memories WHERE vec_state='stale' AND vec_state != 'ok'")]
            pending = db.conn.execute(
                "SELECT id, context FROM memories WHERE vec_state='pending' "
                "AND vec_state != 'ok' AND status=?",
                (MemoryStatus.ACTIVE.value,),
            ).fetchall()
        if not stale and not pending:
            return 0
        if stale:
            self.index().delete(stale)
            with db.write() as conn:
                conn.executemany(
                    "UPDATE memories SET vec_state='none' WHERE id=? AND vec_state='stale'",
                    [(i,) for i in stale],
                )
        for start in range(0, len(pending), batch_size):
            part = pending[start : start + batch_size]
            found = get_many(db, [r[0] for r in part])
            memories = [found[r[0]] for r in part if r[0] in found]
            contexts = {r[0]: r[1] for r in part}
            docs = [
                embedding_text(m.text, type=m.type, key=m.key, context=contexts[m.id],
                               created_at=m.created_at)
                for m in memories
            ]
            if memories:
                self.upsert_vectors(memories, self.embedder().embed_documents(docs))
        return len(stale) + len(pending)

    def rebuild(self) -> int:
        """Recreate the Chroma collection from SQLite (e.g. after changing embedding model)."""
        self.index().drop()
        with self._db.lock:
            self._vectors = None
        with self._db.write() as conn:
            conn.execute("UPDATE memories SET vec_state='none'")
            conn.execute("UPDATE memories SET vec_state='pending' WHERE status=?",
                         (MemoryStatus.ACTIVE.value,))
        return self.sync()

    def dense_candidates(self, query_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        vectors = self.index()  # opening may find the collection empty and queue re-embedding
        self.sync()
        return vectors.query(query_vector, k)

    def cosines(self, query_vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Exact cosine of stored memory vectors to the query (ids without a vector are absent)."""
        if not ids:
            return {}
        stored = self.index().get_embeddings(list(ids))
        return {i: float(np.asarray(v, dtype=np.float32) @ query_vector) for i, v in stored.items()}
