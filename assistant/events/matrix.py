"""The event vectors in memory, for search by meaning without a vector database.

Loaded from the store once per process, then only the vectors written since (`vec_seq`); a
removal anywhere (the store's `generation` changes) reloads it all, so a removed event can
never be found by a process that had it cached. Filters (type, time, importance, session) are
applied to these arrays before the dot product.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from assistant.events.model import Event, EventType
from assistant.events.store import EventStore
from indexing.dense_snapshot import one_blas_thread


@dataclass(frozen=True, slots=True)
class Filters:
    types: tuple[EventType, ...] = ()
    since: float | None = None
    until: float | None = None
    session: str | None = None
    min_importance: float = 0.0


NO_FILTERS = Filters()
TYPE_CODES = {t.value: i for i, t in enumerate(EventType)}


class EventMatrix:
    def __init__(self, store: EventStore, model_id: str, dimension: int) -> None:
        self._store = store
        self._model_id = model_id
        self._dim = dimension
        self._lock = threading.Lock()
        self._generation = -1
        self._vec_seq = 0
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}  # id → row
        # Rows [0, len(self._ids)) are the vectors; the rest is room to grow into, so new
        # vectors are copied in place instead of the whole matrix (77 MB at 50k) per refresh.
        self._buffer = np.zeros((0, dimension), dtype=np.float32)
        self._ts = np.zeros(0)
        self._importance = np.zeros(0)
        self._types = np.zeros(0, dtype=np.int8)  # index in TYPE_CODES
        self._sessions: list[str | None] = []

    def _refresh(self) -> None:
        generation = self._store.generation()
        if generation != self._generation:
            self._generation, self._vec_seq = generation, 0
            self._ids, self._sessions, self._rows = [], [], {}
            self._types = np.zeros(0, dtype=np.int8)
            self._buffer = np.zeros((0, self._dim), dtype=np.float32)
            self._ts, self._importance = np.zeros(0), np.zeros(0)
        rows = self._store.vectors_since(self._vec_seq, model_id=self._model_id)
        if not rows:
            return
        known = self._rows
        fresh = [r for r in rows if r[1] not in known and len(r[2]) == 4 * self._dim]
        # A re-embedded event (model change) keeps its slot: overwrite it in place.
        for _, event_id, blob, *_rest in rows:
            if event_id in known and len(blob) == 4 * self._dim:
                self._buffer[known[event_id]] = np.frombuffer(blob, dtype=np.float32)
        if fresh:
            added = np.frombuffer(b"".join(r[2] for r in fresh), dtype=np.float32)
            self._append(added.reshape(len(fresh), self._dim))
            self._rows.update((r[1], len(self._ids) + n) for n, r in enumerate(fresh))
            self._ids += [r[1] for r in fresh]
            self._ts = np.concatenate([self._ts, [r[3] for r in fresh]])
            self._types = np.concatenate([self._types, np.fromiter(
                (TYPE_CODES.get(r[4], -1) for r in fresh), np.int8, len(fresh))])
            self._importance = np.concatenate([self._importance, [r[5] for r in fresh]])
            self._sessions += [r[6] for r in fresh]
        self._vec_seq = rows[-1][0]

    def _append(self, rows: np.ndarray) -> None:
        """Copy `rows` after the current vectors (before `_ids` grows), growing by half."""
        used, need = len(self._ids), len(self._ids) + len(rows)
        if need > len(self._buffer):
            grown = np.zeros((max(need, len(self._buffer) * 3 // 2, 1024), self._dim),
                             dtype=np.float32)
            grown[:used] = self._buffer[:used]
            self._buffer = grown
        self._buffer[used:need] = rows

    def _mask(self, filters: Filters) -> np.ndarray:
        mask = self._importance >= filters.min_importance
        if filters.since is not None:
            mask &= self._ts >= filters.since
        if filters.until is not None:
            mask &= self._ts < filters.until
        if filters.types:
            mask &= np.isin(self._types, [TYPE_CODES[t.value] for t in filters.types])
        if filters.session is not None:
            mask &= np.fromiter((s == filters.session for s in self._sessions), bool,
                                len(self._sessions))
        return mask

    def search(
        self, query_vector: np.ndarray, k: int, filters: Filters
    ) -> list[tuple[str, float]]:
        """The `k` nearest events passing `filters`, as (id, cosine), best first."""
        with self._lock:
            self._refresh()
            if not self._ids:
                return []
            mask = self._mask(filters)
            valid = int(np.count_nonzero(mask))
            if valid == 0:
                return []
            # All rows in one product over the contiguous matrix, the filtered ones pushed to
            # -inf: no copy of the selected rows (that copy cost more than the product).
            with one_blas_thread():  # OpenBLAS's second thread spins: see dense_snapshot.py
                scores = self._buffer[:len(self._ids)] @ np.asarray(query_vector,
                                                                    dtype=np.float32)
            scores = np.where(mask, scores, -np.inf)
            take = min(k, valid)
            best = np.argpartition(-scores, take - 1)[:take]
            best = best[np.argsort(-scores[best])]
            return [(self._ids[i], float(scores[i])) for i in best]

    def size(self) -> int:
        with self._lock:
            self._refresh()
            return len(self._ids)


def passes(event: Event, filters: Filters) -> bool:
    """Whether `event` passes `filters` (for keyword candidates, read from their rows)."""
    return (event.importance >= filters.min_importance
            and (filters.since is None or event.ts >= filters.since)
            and (filters.until is None or event.ts < filters.until)
            and (not filters.types or event.type in filters.types)
            and (filters.session is None or event.session == filters.session))
