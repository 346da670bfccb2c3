"""MemoryStore: the one object every caller reads and writes memories through — a thin facade
over the store's concepts, each in its own module:

- `database.py` — the connection, its lock and the write transaction; `schema.py` its tables;
- `rows.py` — reads; `write_rules.py` — what every write must pass; `writes.py` — changes and
  their history; `undo.py` — undoing them; `profile_store.py` — the profile's row;
- `import_runs.py` — resumable bulk imports; `erase.py` — erasure for good;
- `vectors.py` — the vectors, a derived index caught up from SQLite (`sync_vectors`).

SQLite is the source of truth; keywords change in the same transaction as their memory,
vectors follow (eagerly after each write unless `eager_vectors=False`).
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from assistant.memory import erase as erasing
from assistant.memory import import_runs, rows, undo, writes
from assistant.memory import profile_store as profiles
from assistant.memory.clock import Clock, system_clock
from assistant.memory.database import (
    KEYWORD_TABLE,
    PROFILE_ID,
    KeywordFactory,
    KeywordSearch,
    MemoryDatabase,
)
from assistant.memory.errors import (
    ConcurrentChange,
    MemoryNotFound,
    NotGrounded,
    NothingToUndo,
    SecretRejected,
)
from assistant.memory.import_runs import AlreadyImported, ImportConflict, ImportReport, ImportRun
from assistant.memory.model import (
    Actor,
    Event,
    HistoryEvent,
    Memory,
    MemoryStatus,
    MemoryType,
    NewMemory,
    Profile,
)
from assistant.memory.schema import SCHEMA, SCHEMA_VERSION
from assistant.memory.vectors import VectorIndex, VectorSync
from assistant.memory.write_rules import check_new

if TYPE_CHECKING:
    from indexing.embedder import Embedder

__all__ = [
    "KEYWORD_TABLE", "PROFILE_ID", "SCHEMA", "SCHEMA_VERSION", "AlreadyImported",
    "ConcurrentChange", "ImportConflict", "ImportReport", "ImportRun", "KeywordSearch",
    "MemoryNotFound", "MemoryStore", "NotGrounded", "NothingToUndo", "SecretRejected",
    "VectorIndex",
]


class MemoryStore:
    """All reads and writes of memories. Thread-safe within a process; WAL across processes."""

    def __init__(
        self,
        db_path: Path,
        *,
        embedder: Callable[[], Embedder],
        vectors: Callable[[], VectorIndex],
        keywords: KeywordFactory | None = None,
        clock: Clock = system_clock,
        eager_vectors: bool = True,
    ) -> None:
        self._db = MemoryDatabase(db_path, clock=clock, keywords=keywords)
        self._vectors = VectorSync(self._db, embedder=embedder, vectors=vectors)
        # False (the CLI): writes only queue vector work, so `brain memory add` never waits for
        # the embedding model; the next search catches up.
        self.eager_vectors = eager_vectors

    # --- the database -------------------------------------------------------------------------

    @property
    def db_path(self) -> Path:
        return self._db.db_path

    @property
    def clock(self) -> Clock:
        return self._db.clock

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    @property
    def keywords(self) -> KeywordSearch:
        return self._db.keywords

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` after every change made through this store; returns unsubscribe."""
        return self._db.subscribe(callback)

    def on_behalf_of(self, via: str) -> AbstractContextManager[None]:
        """Changes made by this thread inside the block record `via` in their history."""
        return self._db.on_behalf_of(via)

    def change_count(self) -> int:
        """Grows whenever the memories change, also by another process (poll it to refresh)."""
        return self._db.change_count()

    def now(self) -> float:
        """Unix seconds by the store's clock."""
        return self._db.now()

    def close(self) -> None:
        self._db.close()

    # --- reads --------------------------------------------------------------------------------

    def resolve_id(self, prefix: str) -> str:
        """The full id for a unique prefix (case-insensitive)."""
        return rows.resolve_id(self._db, prefix)

    def get(self, id_or_prefix: str) -> Memory:
        return rows.get(self._db, id_or_prefix)

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        return rows.get_many(self._db, ids)

    def list(
        self,
        *,
        statuses: Iterable[MemoryStatus] | None = (MemoryStatus.ACTIVE,),
        type: MemoryType | None = None,
        key: str | None = None,
        pinned: bool | None = None,
    ) -> builtins.list[Memory]:
        """Memories, pinned first then newest first. `statuses=None` means every status."""
        return rows.list_memories(self._db, statuses=statuses, type=type, key=key,
                                  pinned=pinned)

    def sure_keyed(self, min_confidence: float) -> builtins.list[Memory]:
        """The profile facts every recall carries (see `rows.sure_keyed`)."""
        return rows.sure_keyed(self._db, min_confidence)

    def count(self, status: MemoryStatus | None = MemoryStatus.ACTIVE) -> int:
        return rows.count(self._db, status)

    def history(self, id_or_prefix: str) -> builtins.list[HistoryEvent]:
        return rows.history(self._db, id_or_prefix)

    # --- writes -------------------------------------------------------------------------------

    def vet(self, new: NewMemory, *, actor: Actor = Actor.USER) -> NewMemory:
        """The checks a write would make, without writing: raises SecretRejected, NotGrounded
        or UserError; returns the memory as it would be stored (so a caller can refuse before
        costly work such as reconciliation)."""
        return check_new(new, actor=actor)

    def add(self, new: NewMemory, *, actor: Actor = Actor.USER, sync: bool = True) -> Memory:
        """Store one memory. Raises SecretRejected for secrets, NotGrounded for an assistant's
        memory the user never said, UserError for empty text."""
        memory = writes.add(self._db, new, actor=actor)
        if sync:
            self._after_write()
        return memory

    def edit(
        self,
        id_or_prefix: str,
        text: str,
        *,
        actor: Actor = Actor.USER,
        expected_version: int | None = None,
        key: str | None = None,
        evidence: Sequence[str] = (),
    ) -> Memory:
        """Replace a memory's text (a user edit is marked so later rewrites never override it).
        An assistant's rewrite must be grounded in `evidence`, the user's messages."""
        updated = writes.edit(self._db, id_or_prefix, text, actor=actor,
                              expected_version=expected_version, key=key, evidence=evidence)
        self._after_write()
        return updated

    def delete(self, id_or_prefix: str, *, actor: Actor = Actor.USER) -> Memory:
        """Mark deleted (kept for undo and history until forget-all)."""
        return writes.delete(self._db, id_or_prefix, actor=actor)

    def pin(self, id_or_prefix: str, pinned: bool = True) -> Memory:
        memory, changed = writes.pin(self._db, id_or_prefix, pinned)
        if changed:
            self._after_write()
        return memory

    def supersede(
        self,
        old_id: str,
        new: NewMemory,
        *,
        actor: Actor = Actor.ASSISTANT,
        expected_version: int | None = None,
    ) -> Memory:
        """Store `new` and mark `old_id` superseded by it (linked), in one transaction."""
        created = writes.supersede(self._db, old_id, new, actor=actor,
                                   expected_version=expected_version)
        self._after_write()
        return created

    def archive(self, ids: Sequence[str], *, actor: Actor = Actor.ASSISTANT) -> int:
        """Capacity limit: archive active, unpinned memories (reversible with undo/restore)."""
        return writes.archive(self._db, ids, actor=actor)

    def mark_used(self, ids: Sequence[str]) -> None:
        writes.mark_used(self._db, ids)

    # --- imports ------------------------------------------------------------------------------

    def begin_import(
        self, content_hash: str, *, name: str, total: int, again: bool = False
    ) -> ImportRun:
        """The run an import of this content carries on (see `import_runs.begin_import`)."""
        return import_runs.begin_import(self._db, content_hash, name=name, total=total,
                                        again=again)

    def finish_import(self, run: ImportRun) -> None:
        """Record that the run got through its final vector step."""
        import_runs.finish_import(self._db, run)

    def import_runs(self) -> builtins.list[ImportRun]:
        """Every recorded import run, oldest first."""
        return import_runs.import_runs(self._db)

    def add_many(
        self,
        items: Sequence[NewMemory],
        *,
        actor: Actor = Actor.USER,
        batch_size: int = 512,
        dedup_threshold: float | None = None,
        progress: Callable[[int, int], None] | None = None,
        run: ImportRun | None = None,
    ) -> ImportReport:
        """Bulk insert (import), resuming `run` (see `import_runs.add_many`)."""
        return import_runs.add_many(self._db, self._vectors, items, actor=actor,
                                    batch_size=batch_size, dedup_threshold=dedup_threshold,
                                    progress=progress, run=run)

    # --- undo ---------------------------------------------------------------------------------

    def undo(self, id_or_prefix: str, *, expected_version: int | None = None) -> Memory:
        """Restore the state before the latest change not yet undone; repeatable (with
        `expected_version`: only if nothing changed the memory since; see `undo.undo`)."""
        restored = undo.undo(self._db, id_or_prefix, expected_version=expected_version)
        self._after_write()
        return restored

    def undo_change(self, change_id: int) -> Memory:
        """Undo one history entry (`HistoryEvent.seq`) while it is its memory's latest."""
        restored = undo.undo_change(self._db, change_id)
        self._after_write()
        return restored

    def undo_last(self) -> tuple[Memory, Event]:
        """Undo the most recent change to any memory (`brain memory undo` without an id);
        returns the memory as restored and the kind of change undone."""
        change_id, event = undo.latest_undoable(self._db)
        return self.undo_change(change_id), event

    def latest_change(self, id_or_prefix: str) -> HistoryEvent | None:
        """The memory's latest change that can still be undone (its `seq` is the change id)."""
        return undo.latest_change(self._db, id_or_prefix)

    # --- vectors and search -------------------------------------------------------------------

    def embedder(self) -> Embedder:
        return self._vectors.embedder()

    def vectors(self) -> VectorIndex:
        return self._vectors.index()

    def _after_write(self) -> None:
        if self.eager_vectors:
            self.sync_vectors()

    def sync_vectors(self, batch_size: int = 256) -> int:
        """Write pending vectors and remove stale ones; returns how many rows were fixed."""
        return self._vectors.sync(batch_size)

    def rebuild_vectors(self) -> int:
        """Recreate the Chroma collection from SQLite (e.g. after changing embedding model)."""
        return self._vectors.rebuild()

    def dense_candidates(
        self, query_vector: np.ndarray, k: int
    ) -> builtins.list[tuple[str, float]]:
        return self._vectors.dense_candidates(query_vector, k)

    def cosines(self, query_vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Exact cosine of stored memory vectors to the query (ids without a vector are absent)."""
        return self._vectors.cosines(query_vector, ids)

    def keyword_candidates(self, query: str, k: int) -> builtins.list[tuple[str, float]]:
        if k <= 0 or not query.strip():
            return []
        with self._db.lock:
            return self._db.keywords.search(query, k)

    # --- profile ------------------------------------------------------------------------------

    def profile(self) -> Profile:
        return profiles.read_profile(self._db)

    def set_profile(self, text: str, *, actor: Actor,
                    sources: Sequence[str] | None = None) -> Profile:
        """Write the profile. A model rewrite of a user-edited profile is only proposed.
        `sources`: the memories a model rewrite was built from."""
        return profiles.set_profile(self._db, text, actor=actor, sources=sources)

    def undo_profile(self) -> Profile:
        """Put back the profile text from before its latest change."""
        return profiles.undo_profile(self._db)

    def accept_pending_profile(self) -> Profile:
        return profiles.accept_pending_profile(self._db)

    # --- erase --------------------------------------------------------------------------------

    def derived_texts(self, ids: Sequence[str] | None = None) -> set[str]:
        """Every text the store may have embedded for these memories (all when None), in every
        version their history records: to erase what older releases cached on disk."""
        return erasing.derived_texts(self._db, ids)

    def purge(self, id_or_prefix: str) -> Memory:
        """Erase one memory for good — its row, history, keyword entry and vector — and scrub
        the files so nothing of it remains (no undo). Returns it as it was."""
        return erasing.purge(self._db, self._vectors, id_or_prefix)

    def erase(self, memory_id: str) -> bool:
        """`purge` by exact id, idempotent; returns whether the row was there."""
        return erasing.erase(self._db, self._vectors, memory_id)

    def forget_all(self) -> int:
        """Erase every memory, its history, its vectors and keyword rows; leave nothing on disk."""
        return erasing.forget_all(self._db, self._vectors)
