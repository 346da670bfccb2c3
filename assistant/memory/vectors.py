"""The memories' vectors: a derived index of the active rows, caught up from SQLite.

Vectors live in the Chroma collection `memories`; a row's `vec_state` says whether its vector
must be (re)written (`pending`) or removed (`stale`), and `sync()` catches Chroma up, so a crash
between a commit and its vector write never leaves them inconsistent for long, and `rebuild()`
recreates the collection from SQLite alone. Only active memories are indexed. The write order
and the catch-up are the derived-index core's (`indexing/derived_index.py`); the flags are
memory's own, so a search reads two short lists (a partial index) and never compares every id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from assistant.memory.database import MemoryDatabase
from assistant.memory.document import embedding_text
from assistant.memory.model import Memory, MemoryStatus
from assistant.memory.rows import get_many
from indexing import derived_index
from indexing.derived_index import DerivedIndex, VectorDoc

if TYPE_CHECKING:
    from indexing.embedder import Embedder


class VectorIndex(derived_index.VectorIndex, Protocol):
    """The derived-index vector protocol, and the compaction memory's erasure runs."""

    def compact(self) -> int: ...


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
        """Vectors already computed (an import's dedup needed them), then their rows' flags."""
        self.index().upsert(
            [m.id for m in memories], vectors, [_metadata(m) for m in memories]
        )
        self._written([m.id for m in memories])

    def _written(self, ids: Sequence[str]) -> None:
        with self._db.write() as conn:
            conn.executemany(
                "UPDATE memories SET vec_state='ok' WHERE id=? AND status=?",
                [(i, MemoryStatus.ACTIVE.value) for i in ids],
            )

    def _forgotten(self, ids: Sequence[str]) -> None:
        with self._db.write() as conn:
            conn.executemany(
                "UPDATE memories SET vec_state='none' WHERE id=? AND vec_state='stale'",
                [(i,) for i in ids],
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
        contexts: dict[str, str] = {r[0]: r[1] for r in pending}

        def docs(ids: Sequence[str]) -> list[VectorDoc]:
            found = get_many(db, list(ids))  # a memory deleted meanwhile needs no vector
            return [VectorDoc(i, embedding_text(m.text, type=m.type, key=m.key,
                                                context=contexts[i], created_at=m.created_at),
                              _metadata(m))
                    for i in ids if (m := found.get(i)) is not None]

        core = DerivedIndex(self.index, lambda texts: self.embedder().embed_documents(
            list(texts)), batch=batch_size)
        return core.catch_up(docs, stale=stale, pending=list(contexts),
                             forgotten=self._forgotten, written=self._written)

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


def _metadata(memory: Memory) -> dict[str, str]:
    return {"type": memory.type.value}
