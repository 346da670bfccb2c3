"""One derived-index core: SQLite rows are the truth, vectors are derived from them.

The knowledge sync, the conversation index and memory each keep a vector store in step with
rows of a SQLite database. What they share lives here, once:
- the write order: `write` embeds and upserts the vectors first and only then runs the caller's
  SQLite commit, and `forget` deletes vectors only after the commit that dropped their rows. At
  any instant the rows are the truth and the store may only hold extra vectors (a kill after the
  upsert) or miss some (a kill in the middle of a repair, a lost Chroma folder);
- `reconcile` repairs exactly those two states (orphan vectors deleted, missing ones embedded
  again, in batches), so a SIGKILL at any point leaves a state the next call finishes: it
  writes nothing to SQLite and every batch it finished stays done;
- `catch_up`: for rows that flag what they owe the store (memory's `vec_state`), upkeep on
  write reads those flags only, so a search never compares every id;
- `rebuild`: the rows are rewritten, a vector whose content did not change is kept (embedding is
  the slow part), the vectors of nothing are dropped by the closing reconcile;
- the model-switch rule: one collection per embedding model (`collection_name`) and a collection
  made by another model is started afresh (`open_vectors`): derived vectors are rebuilt from the
  rows, never mixed with another model's;
- one progress event, `indexing.progress.SyncProgress`.
What is a row, which ids it derives and what text is embedded stay with each owner (`Rows`).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from indexing.progress import Phase, ProgressCallback, SyncProgress
from indexing.vector_errors import EmbeddingModelMismatch

if TYPE_CHECKING:
    from pathlib import Path

    from indexing.vectors import VectorStore

log = logging.getLogger(__name__)

R = TypeVar("R")

# Texts per embedding call inside one upsert batch: progress moves after each, and the model
# sees the batches it would anyway (embedders split calls into batches of 64).
EMBED_SLICE = 64


class VectorIndex(Protocol):
    """The part of `indexing.vectors.VectorStore` a derived index and its searches use."""

    def upsert(
        self, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[dict[str, Any]]
    ) -> None: ...
    def delete(self, ids: Sequence[str]) -> None: ...
    def query(
        self, embedding: np.ndarray, k: int, *, where: Any = None, ids: Any = None
    ) -> list[tuple[str, float]]: ...
    def ids(self) -> list[str]: ...
    def count(self) -> int: ...
    def drop(self) -> None: ...
    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True, slots=True)
class VectorDoc:
    """One vector to derive: its id, the text embedded, the metadata stored beside it."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Rows:
    """The truth side of one derived index, as the core asks for it."""

    ids: Callable[[], set[str]]  # every id the rows say must have a vector
    # Those of the given ids still present, as docs (a row deleted meanwhile needs no vector).
    docs: Callable[[Sequence[str]], Sequence[VectorDoc]]
    # The order missing ids are embedded in (e.g. by length: a model batch pads to its longest
    # text); None keeps them sorted by id.
    order: Callable[[list[str]], list[str]] | None = None


@dataclass(frozen=True, slots=True)
class Reconciled:
    removed: int = 0  # orphan vectors deleted
    repaired: int = 0  # ids whose missing vector was embedded again

    @property
    def fixed(self) -> int:
        return self.removed + self.repaired


def collection_name(kind: str, model_id: str, dimension: int) -> str:
    """One collection per embedding model and dimension: switching models never mixes spaces."""
    digest = hashlib.sha256(f"{model_id}\n{dimension}".encode()).hexdigest()[:12]
    return f"{kind}-{digest}"


def open_vectors(
    location: str | Path, name: str, *, model_id: str, dimension: int, what: str
) -> VectorStore:
    """The collection `name`; one holding another model's vectors is started afresh (its
    vectors are derived from SQLite, so the owner's reconcile or upkeep embeds them again)."""
    from indexing.vectors import VectorStore

    try:
        return VectorStore.open(location, name, model_id=model_id, dimension=dimension)
    except EmbeddingModelMismatch:
        log.info("%s vectors were made with another model; rebuilding them", what)
        return VectorStore.open(location, name, model_id=model_id, dimension=dimension,
                                recreate=True)


class DerivedIndex:
    """Keeps one vector store derived from rows; the caller serialises writers (its lock)."""

    def __init__(
        self,
        vectors: Callable[[], VectorIndex],
        embed: Callable[[Sequence[str]], np.ndarray],
        *,
        batch: int,
        progress: ProgressCallback | None = None,
    ) -> None:
        # A callable: the store (Chroma) is opened only when a vector is read or written.
        self.vectors = vectors
        self.embed = embed
        self.batch = batch
        self.progress = progress

    def upsert(
        self, docs: Sequence[VectorDoc],
        on_slice: Callable[[VectorDoc, int], None] | None = None,
    ) -> None:
        """Embed and upsert `docs`, `batch` per upsert; `on_slice(first doc, texts)` after
        each embedding call."""
        for start in range(0, len(docs), self.batch):
            part = docs[start : start + self.batch]
            slices = []
            for first in range(0, len(part), EMBED_SLICE):
                texts = [d.text for d in part[first : first + EMBED_SLICE]]
                slices.append(self.embed(texts))
                if on_slice is not None:
                    on_slice(part[first], len(texts))
            embeddings = slices[0] if len(slices) == 1 else np.concatenate(slices)
            self.vectors().upsert([d.id for d in part], embeddings,
                                  [d.metadata for d in part])

    def write(
        self, docs: Sequence[VectorDoc], commit: Callable[[], R],
        on_slice: Callable[[VectorDoc, int], None] | None = None,
    ) -> R:
        """Vectors first, then the caller's SQLite transaction (`commit`): a kill between the
        two leaves only vectors without a row, which `reconcile` deletes."""
        self.upsert(docs, on_slice)
        return commit()

    def forget(self, ids: Sequence[str]) -> int:
        """After the commit that dropped their rows: their vectors (a kill before this leaves
        orphans `reconcile` deletes)."""
        if ids:
            self.vectors().delete(list(ids))
        return len(ids)

    def catch_up(
        self, docs: Callable[[Sequence[str]], Sequence[VectorDoc]], *, stale: Sequence[str],
        pending: Sequence[str], forgotten: Callable[[Sequence[str]], None],
        written: Callable[[Sequence[str]], None],
    ) -> int:
        """Upkeep for rows that record what they still owe the store (a search then reads two
        short lists, never every id): the vectors of `stale` ids are deleted, then
        `forgotten(stale)` records that; `pending` ids (as `docs` gives them: a row gone
        meanwhile is left out) are embedded and upserted in batches,
        each followed by `written(ids upserted)`. A kill anywhere leaves the records as they
        were and the next call does that work again (upsert and delete are idempotent).
        Returns the ids dealt with."""
        if stale:
            self.forget(stale)
            forgotten(stale)
        for start in range(0, len(pending), self.batch):
            part = docs(pending[start : start + self.batch])
            if part:
                self.write(part, partial(written, [d.id for d in part]))
        return len(stale) + len(pending)

    def remove_orphans(self, rows: Rows) -> int:
        """Delete the vectors no row derives."""
        want = rows.ids()
        return self.forget(sorted(set(self.vectors().ids()) - want))

    def reconcile(self, rows: Rows) -> Reconciled:
        """Make the store hold exactly the rows' ids: orphans deleted, missing vectors embedded
        in batches (one `repairing` progress event per batch). It writes no row, and each
        upsert is whole: interrupted anywhere, the next call finishes the rest."""
        want = rows.ids()
        have = set(self.vectors().ids())
        extra = sorted(have - want)
        missing = sorted(want - have)
        if rows.order is not None and missing:
            missing = rows.order(missing)
        self.forget(extra)
        done = 0
        for start in range(0, len(missing), self.batch):
            part = missing[start : start + self.batch]
            self.upsert(rows.docs(part))
            done += len(part)
            if self.progress is not None:
                self.progress(SyncProgress(Phase.repairing, chunks_done=done,
                                           chunks_total=len(missing)))
        return Reconciled(removed=len(extra), repaired=len(missing))

    def rebuild(
        self, rows: Rows, rewrite: Callable[[set[str]], R], *, present: set[str] | None = None,
    ) -> tuple[R, Reconciled]:
        """Rewrite the rows (`rewrite(ids of the vectors in the store)`: the owner keeps those
        whose content it knows unchanged), then reconcile: vectors of nothing are dropped and
        any the rewrite did not write are embedded. A kill in the middle leaves rows the
        owner's next sync completes and orphans the next reconcile deletes. `present`: the
        store's ids when the owner read them already (the knowledge index does, to start an
        unreadable collection afresh), so the store is not listed twice."""
        result = rewrite(set(self.vectors().ids()) if present is None else present)
        return result, self.reconcile(rows)
