"""MemoryStore: SQLite is the source of truth; vectors and keywords are derived indexes.

- Every change is one write transaction (`BEGIN IMMEDIATE`) that also appends to `history`, so
  undo can restore any earlier state and nothing is ever silently lost.
- Each row carries a `version`; writers that read a memory earlier (extraction, reconciliation)
  pass the version they saw and the write is refused if it changed meanwhile: a user's edit made
  while extraction was running always wins.
- The keyword table lives in the same database and changes in the same transaction. Vectors live
  in the Chroma collection `memories`; a row's `vec_state` says whether its vector must be
  (re)written or removed, and `sync_vectors()` catches Chroma up, so a crash between the two never
  leaves them inconsistent for long and `rebuild_vectors()` can recreate the collection from
  SQLite alone. Only active memories are indexed.
- Deleted rows are overwritten on disk (`secure_delete`), and `forget_all()` also VACUUMs.
- Imports are recorded in `imports` (content hash, lines committed); each batch's memories and
  the run's committed count change in one transaction, so a killed import resumes exactly where
  its last batch ended and never stores a line twice.
"""

from __future__ import annotations

import builtins
import json
import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from assistant.errors import UserError
from assistant.memory.clock import Clock, system_clock, to_iso
from assistant.memory.document import embedding_text, search_text
from assistant.memory.grounding import grounding_reason
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
from assistant.memory.secrets import find_secret, find_secret_in
from assistant.store_health import MEMORY_RECOVERY
from indexing.sqlite_db import Schema, open_database

if TYPE_CHECKING:
    from indexing.embedder import Embedder

log = logging.getLogger(__name__)

KEYWORD_TABLE = "memory_fts"
PROFILE_ID = "profile"
_ID_BYTES = 4  # 8 hex chars: short enough to type, checked for collisions


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


class KeywordSearch(Protocol):
    """The part of `indexing.keywords.KeywordIndex` the memory store uses."""

    def add(self, items: Iterable[tuple[str, str]]) -> object: ...
    def delete(self, ids: Iterable[str]) -> object: ...
    def search(self, query: str, k: int, *, ids: Any = None) -> list[tuple[str, float]]: ...
    def count(self) -> int: ...
    def optimize(self) -> None: ...


class MemoryNotFound(UserError):
    pass


class SecretRejected(UserError):
    pass


class NotGrounded(UserError):
    """A memory proposed by the assistant that the user never said (e.g. a document's text)."""


class ConcurrentChange(UserError):
    """The memory changed since it was read; the newer change (usually the user's) is kept."""


class NothingToUndo(UserError):
    pass


class AlreadyImported(UserError):
    """The same content was imported in full before (importing it again needs `again=True`)."""

    def __init__(self, message: str, *, run: ImportRun) -> None:
        super().__init__(message)
        self.run = run


_MIGRATIONS: tuple[str, ...] = (
    # 1: initial schema
    """
    CREATE TABLE memories (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        key TEXT,
        text TEXT NOT NULL,
        context TEXT NOT NULL DEFAULT '',
        confidence REAL NOT NULL,
        importance REAL NOT NULL,
        status TEXT NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_used_at TEXT,
        use_count INTEGER NOT NULL DEFAULT 0,
        source TEXT,
        session_id TEXT,
        source_text TEXT,
        superseded_by TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        edited_by_user INTEGER NOT NULL DEFAULT 0,
        vec_state TEXT NOT NULL DEFAULT 'pending'
    );
    CREATE INDEX memories_status ON memories(status);
    CREATE INDEX memories_key ON memories(key) WHERE key IS NOT NULL;
    CREATE INDEX memories_vec ON memories(vec_state) WHERE vec_state != 'ok';
    CREATE TABLE history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id TEXT NOT NULL,
        event TEXT NOT NULL,
        old_text TEXT,
        new_text TEXT,
        actor TEXT NOT NULL,
        at TEXT NOT NULL,
        old_state TEXT,
        undone INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX history_memory ON history(memory_id, seq);
    CREATE TABLE profile (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        text TEXT NOT NULL,
        updated_at TEXT,
        edited_by_user INTEGER NOT NULL DEFAULT 0,
        pending_text TEXT
    );
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
    # 2: import runs (resume an interrupted `brain memory import`, refuse a repeated one)
    """
    CREATE TABLE imports (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        content_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        total INTEGER NOT NULL,
        committed INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        started_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX imports_hash ON imports(content_hash, id);
    """,
    # 3: whether a run got through its final vector step (a run killed there is finished, its
    # lines all stored, but some memories still lack a vector: the re-run says so and repairs)
    """
    ALTER TABLE imports ADD COLUMN vectors_done INTEGER NOT NULL DEFAULT 1;
    """,
    # 4: the memories a model-written profile was built from (JSON list of ids; NULL: not
    # known, as for profiles written before: then every memory counts as used), so the profile
    # follows its sources when one is edited, deleted or erased
    """
    ALTER TABLE profile ADD COLUMN sources TEXT;
    """,
    # 5: which outside agent (MCP client) made a change, for Actor.AGENT rows
    """
    ALTER TABLE history ADD COLUMN via TEXT;
    """,
)
SCHEMA = Schema("memory store", _MIGRATIONS)
SCHEMA_VERSION = SCHEMA.version

_COLUMNS = (
    "id, type, key, text, confidence, importance, status, pinned, created_at, updated_at, "
    "last_used_at, use_count, source, session_id, source_text, superseded_by, version, "
    "edited_by_user"
)
# Restorable state: everything a change can alter.
_STATE_FIELDS = (
    "type", "key", "text", "confidence", "importance", "status", "pinned", "superseded_by",
    "edited_by_user",
)


def _row_to_memory(row: sqlite3.Row) -> Memory:
    return Memory(
        id=row["id"],
        type=MemoryType(row["type"]),
        key=row["key"],
        text=row["text"],
        confidence=float(row["confidence"]),
        importance=float(row["importance"]),
        status=MemoryStatus(row["status"]),
        pinned=bool(row["pinned"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_used_at=row["last_used_at"],
        use_count=int(row["use_count"]),
        source=row["source"],
        session_id=row["session_id"],
        source_text=row["source_text"],
        superseded_by=row["superseded_by"],
        version=int(row["version"]),
        edited_by_user=bool(row["edited_by_user"]),
    )


def _state(memory: Memory) -> dict[str, Any]:
    return {
        "type": memory.type.value,
        "key": memory.key,
        "text": memory.text,
        "confidence": memory.confidence,
        "importance": memory.importance,
        "status": memory.status.value,
        "pinned": int(memory.pinned),
        "superseded_by": memory.superseded_by,
        "edited_by_user": int(memory.edited_by_user),
    }


def _clamp01(value: float, name: str) -> float:
    if not 0.0 <= value <= 1.0:
        raise UserError(f"{name} must be between 0 and 1, got {value}")
    return float(value)


@dataclass(frozen=True, slots=True)
class ImportReport:
    added: int
    skipped_duplicates: int
    already_stored: int = 0  # lines an interrupted earlier run of the same import committed
    # An earlier run stored every line but was killed in its final vector step: nothing was
    # imported now, `repaired` missing vectors were written.
    finished_earlier: bool = False
    repaired: int = 0


@dataclass(frozen=True, slots=True)
class ImportRun:
    """One run of an import: `committed` of its `total` lines are stored (in file order)."""

    id: int
    content_hash: str
    name: str
    total: int
    committed: int
    added: int
    started_at: str
    finished_at: str | None
    vectors_done: bool = True  # got through its final vector step

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


def _row_to_run(row: sqlite3.Row) -> ImportRun:
    return ImportRun(
        id=int(row["id"]), content_hash=row["content_hash"], name=row["name"],
        total=int(row["total"]), committed=int(row["committed"]), added=int(row["added"]),
        started_at=row["started_at"], finished_at=row["finished_at"],
        vectors_done=bool(row["vectors_done"]),
    )


def _when(iso: str) -> str:
    return iso.replace("T", " ")[:16] + " UTC"


class MemoryStore:
    """All reads and writes of memories. Thread-safe within a process; WAL across processes."""

    def __init__(
        self,
        db_path: Path,
        *,
        embedder: Callable[[], Embedder],
        vectors: Callable[[], VectorIndex],
        keywords: Callable[[sqlite3.Connection, str], KeywordSearch] | None = None,
        clock: Clock = system_clock,
        eager_vectors: bool = True,
    ) -> None:
        self.db_path = Path(db_path)
        # False (the CLI): writes only queue vector work, so `brain memory add` never waits for
        # the embedding model; the next search catches up.
        self.eager_vectors = eager_vectors
        self.clock = clock
        self._embedder_factory = embedder
        self._vectors_factory = vectors
        self._embedder: Embedder | None = None
        self._vectors: VectorIndex | None = None
        self._lock = threading.RLock()
        self._listeners: list[Callable[[], None]] = []
        self._local_changes = 0
        self._agent = threading.local()
        self.conn = open_database(
            self.db_path, SCHEMA, error=UserError,
            pragmas=(
                "journal_mode=WAL", "synchronous=NORMAL",
                "secure_delete=ON",  # deleted memories are zeroed on disk
                "foreign_keys=ON",
            ),
            damaged_hint=MEMORY_RECOVERY,
        )
        self.conn.row_factory = sqlite3.Row
        with suppress(OSError):
            self.db_path.chmod(0o600)
        if keywords is None:
            from assistant.memory.keywords import MemoryKeywords

            keywords = MemoryKeywords
        self._keywords_factory = keywords
        self.keywords = keywords(self.conn, KEYWORD_TABLE)

    # --- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self._local_changes += 1
        self._notify()

    def _notify(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # a broken listener must not break a write
                log.exception("memory change listener failed")

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback()` after every change made through this store; returns unsubscribe."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    @contextmanager
    def on_behalf_of(self, via: str) -> Iterator[None]:
        """Changes made by this thread inside the block record `via` in their history — the
        MCP client's name for Actor.AGENT, the statement rule for an assistant memory no model
        wrote: a thread-local, since one store serves the TUI's and an MCP server's threads
        alike."""
        previous = getattr(self._agent, "via", None)
        self._agent.via = via
        try:
            yield
        finally:
            self._agent.via = previous

    def change_count(self) -> int:
        """Grows whenever the memories change, also by another process (poll it to refresh)."""
        with self._lock:
            data_version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        return self._local_changes + data_version

    def now(self) -> str:
        return to_iso(self.clock())

    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = self._embedder_factory()
            return self._embedder

    def vectors(self) -> VectorIndex:
        with self._lock:
            if self._vectors is None:
                vectors = self._vectors_factory()
                if vectors.count() == 0:
                    # A new or recreated collection (first run, model change, deleted folder):
                    # every active memory needs its vector again.
                    with self._write() as conn:
                        conn.execute(
                            "UPDATE memories SET vec_state='pending' WHERE status=? AND "
                            "vec_state='ok'", (MemoryStatus.ACTIVE.value,))
                self._vectors = vectors
            return self._vectors

    def close(self) -> None:
        with self._lock:
            with suppress(sqlite3.Error):
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.close()

    def _new_id(self, conn: sqlite3.Connection) -> str:
        while True:
            candidate = secrets.token_hex(_ID_BYTES)
            if candidate == PROFILE_ID[:8]:
                continue
            if conn.execute("SELECT 1 FROM memories WHERE id=?", (candidate,)).fetchone() is None:
                return candidate

    def _log(
        self,
        conn: sqlite3.Connection,
        memory_id: str,
        event: Event,
        actor: Actor,
        *,
        old: Memory | None,
        new_text: str | None,
        undone: bool = False,
    ) -> None:
        conn.execute(
            "INSERT INTO history (memory_id, event, old_text, new_text, actor, at, old_state, "
            "undone, via) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                memory_id,
                event.value,
                old.text if old else None,
                new_text,
                actor.value,
                self.now(),
                json.dumps(_state(old)) if old else None,
                int(undone),
                getattr(self._agent, "via", None) if actor is not Actor.USER else None,
            ),
        )

    def _index_keywords(self, memories: Sequence[tuple[Memory, str]]) -> None:
        if memories:
            self.keywords.add(
                (m.id, search_text(m.text, type=m.type, key=m.key, context=ctx,
                                   created_at=m.created_at))
                for m, ctx in memories
            )

    def _reindex(self, conn: sqlite3.Connection, memory: Memory) -> None:
        """Bring the keyword row and the vector state in line with the memory's status."""
        self.keywords.delete([memory.id])
        if memory.status is MemoryStatus.ACTIVE:
            ctx = conn.execute("SELECT context FROM memories WHERE id=?", (memory.id,)).fetchone()
            self._index_keywords([(memory, ctx[0] if ctx else "")])
            conn.execute("UPDATE memories SET vec_state='pending' WHERE id=?", (memory.id,))
        else:
            conn.execute("UPDATE memories SET vec_state='stale' WHERE id=?", (memory.id,))

    def _fetch(self, conn: sqlite3.Connection, memory_id: str) -> Memory:
        row = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id=?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFound(f"no memory with id {memory_id!r}")
        return _row_to_memory(row)

    def _apply(
        self,
        conn: sqlite3.Connection,
        memory: Memory,
        changes: dict[str, Any],
        *,
        event: Event,
        actor: Actor,
        expected_version: int | None = None,
        log_event: bool = True,
        undone: bool = False,
    ) -> Memory:
        """Write `changes` to one memory, bump its version, log it, re-index it."""
        if expected_version is not None and memory.version != expected_version:
            raise ConcurrentChange(
                f"memory {memory.id} changed since it was read (version {memory.version}, "
                f"expected {expected_version}); the newer change was kept"
            )
        changes = dict(changes)
        changes["updated_at"] = self.now()
        sets = ", ".join(f"{k}=?" for k in changes)
        conn.execute(
            f"UPDATE memories SET {sets}, version=version+1 WHERE id=?",
            (*changes.values(), memory.id),
        )
        updated = self._fetch(conn, memory.id)
        if log_event:
            self._log(conn, memory.id, event, actor, old=memory, new_text=updated.text,
                      undone=undone)
        if any(k in changes for k in ("text", "status", "key", "type")):
            self._reindex(conn, updated)
        return updated

    # --- reads --------------------------------------------------------------------------------

    def resolve_id(self, prefix: str) -> str:
        """The full id for a unique prefix (case-insensitive)."""
        wanted = prefix.strip().lower()
        if not wanted:
            raise MemoryNotFound("empty memory id")
        with self._lock:
            rows = self.conn.execute(
                "SELECT id FROM memories WHERE id >= ? AND id < ? LIMIT 3",
                (wanted, wanted + "\uffff"),
            ).fetchall()
        if not rows:
            raise MemoryNotFound(
                f"no memory with id {prefix!r}", hint="see `brain memory list --all`"
            )
        if len(rows) > 1:
            raise UserError(
                f"id prefix {prefix!r} matches several memories "
                f"({', '.join(r[0] for r in rows)}…)",
                hint="type more characters of the id",
            )
        return str(rows[0][0])

    def get(self, id_or_prefix: str) -> Memory:
        memory_id = self.resolve_id(id_or_prefix)
        with self._lock:
            return self._fetch(self.conn, memory_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        out: dict[str, Memory] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                part = list(ids[start : start + 500])
                marks = ",".join("?" * len(part))
                for row in self.conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE id IN ({marks})", part
                ):
                    out[row["id"]] = _row_to_memory(row)
        return out

    def list(
        self,
        *,
        statuses: Iterable[MemoryStatus] | None = (MemoryStatus.ACTIVE,),
        type: MemoryType | None = None,
        key: str | None = None,
        pinned: bool | None = None,
    ) -> list[Memory]:
        """Memories, pinned first then newest first. `statuses=None` means every status."""
        where: list[str] = []
        params: list[Any] = []
        if statuses is not None:
            wanted = [s.value for s in statuses]
            where.append(f"status IN ({','.join('?' * len(wanted))})")
            params += wanted
        if type is not None:
            where.append("type=?")
            params.append(type.value)
        if key is not None:
            where.append("key=?")
            params.append(key)
        if pinned is not None:
            where.append("pinned=?")
            params.append(int(pinned))
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        with self._lock:
            rows = self.conn.execute(
                f"SELECT {_COLUMNS} FROM memories {clause} "
                "ORDER BY pinned DESC, updated_at DESC, rowid DESC",
                params,
            ).fetchall()
        return [_row_to_memory(r) for r in rows]

    def count(self, status: MemoryStatus | None = MemoryStatus.ACTIVE) -> int:
        with self._lock:
            if status is None:
                return int(self.conn.execute("SELECT count(*) FROM memories").fetchone()[0])
            return int(
                self.conn.execute(
                    "SELECT count(*) FROM memories WHERE status=?", (status.value,)
                ).fetchone()[0]
            )

    def history(self, id_or_prefix: str) -> builtins.list[HistoryEvent]:
        memory_id = PROFILE_ID if id_or_prefix == PROFILE_ID else self.resolve_id(id_or_prefix)
        with self._lock:
            rows = self.conn.execute(
                "SELECT seq, memory_id, event, old_text, new_text, actor, at, undone, via "
                "FROM history WHERE memory_id=? ORDER BY seq",
                (memory_id,),
            ).fetchall()
        return [
            HistoryEvent(
                seq=r["seq"], memory_id=r["memory_id"], event=Event(r["event"]),
                old_text=r["old_text"], new_text=r["new_text"], actor=Actor(r["actor"]),
                at=r["at"], undone=bool(r["undone"]), via=r["via"],
            )
            for r in rows
        ]

    # --- writes -------------------------------------------------------------------------------

    def _check_new(
        self, new: NewMemory, *, actor: Actor, current_key: str | None = None
    ) -> NewMemory:
        """Normalise a memory about to be written; refuse empty text, secrets and, from the
        assistant, anything the user did not say.

        Every write path (add, import, edit, supersede: the CLI, the TUI, extraction, the
        `remember` tool) passes here, so a secret in the text, the key or both together is never
        stored, and a memory the assistant proposes (tool call, extraction) must be grounded in
        the user's own messages of the conversation (`new.evidence`): a document the model read
        never becomes a memory. The user's words it came from (`source_text`) and its search
        context are kept only if they hold no secret either.
        """
        text = " ".join(new.text.split()) if "\n" not in new.text else new.text.strip()
        if not text:
            raise UserError("a memory needs some text")
        key = new.key.strip().lower().replace(" ", "_") if new.key else None
        # The key as given, not lower-cased: a token's case is part of its shape (AKIA…, ghp_…).
        given_key = new.key.strip().replace(" ", "_") if new.key else None
        finding = find_secret_in(text, key=given_key or current_key, said=new.evidence)
        if finding:
            raise SecretRejected(f"not stored: {finding.message()}")
        if actor is Actor.ASSISTANT:
            ungrounded = grounding_reason(text, new.evidence)
            if ungrounded:
                raise NotGrounded(f"not stored: {ungrounded}")
        source_text = new.source_text
        if source_text and find_secret(source_text):
            source_text = None
        context = new.context if not (new.context and find_secret(new.context)) else ""
        return replace(
            new,
            text=text,
            key=key or None,
            source_text=source_text,
            context=context,
            evidence=(),
            confidence=_clamp01(new.confidence, "confidence"),
            importance=_clamp01(new.importance, "importance"),
        )

    def vet(self, new: NewMemory, *, actor: Actor = Actor.USER) -> NewMemory:
        """The checks a write would make, without writing: raises SecretRejected, NotGrounded
        or UserError; returns the memory as it would be stored (so a caller can refuse before
        costly work such as reconciliation)."""
        return self._check_new(new, actor=actor)

    def _insert(self, conn: sqlite3.Connection, new: NewMemory, actor: Actor) -> Memory:
        now = self.now()
        memory_id = self._new_id(conn)
        conn.execute(
            "INSERT INTO memories (id, type, key, text, context, confidence, importance, status, "
            "pinned, created_at, updated_at, source, session_id, source_text, edited_by_user) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                memory_id, new.type.value, new.key, new.text, new.context, new.confidence,
                new.importance, MemoryStatus.ACTIVE.value, int(new.pinned),
                new.created_at or now, min(new.created_at or now, now), new.source,
                new.session_id, new.source_text,
                int(actor is Actor.USER),
            ),
        )
        memory = self._fetch(conn, memory_id)
        self._log(conn, memory_id, Event.ADD, actor, old=None, new_text=new.text)
        return memory

    def add(self, new: NewMemory, *, actor: Actor = Actor.USER, sync: bool = True) -> Memory:
        """Store one memory. Raises SecretRejected for secrets, NotGrounded for an assistant's
        memory the user never said, UserError for empty text."""
        new = self._check_new(new, actor=actor)
        with self._write() as conn:
            memory = self._insert(conn, new, actor)
            self._index_keywords([(memory, new.context)])
        if sync:
            self._after_write()
        return memory

    def begin_import(
        self, content_hash: str, *, name: str, total: int, again: bool = False
    ) -> ImportRun:
        """The run an import of this content carries on: its unfinished run (resume) or a new one.

        Raises `AlreadyImported` if the content was imported in full and `again` is False. An
        interrupted run is resumed even with `again`, so re-running a killed `--again` import
        converges too.
        """
        with self._write() as conn:
            row = conn.execute(
                "SELECT * FROM imports WHERE content_hash=? ORDER BY id DESC LIMIT 1",
                (content_hash,),
            ).fetchone()
            latest = _row_to_run(row) if row else None
            if latest is not None and not latest.finished:
                if latest.vectors_done:  # a run from before the column: its vectors are due
                    conn.execute("UPDATE imports SET vectors_done=0 WHERE id=?", (latest.id,))
                return replace(latest, vectors_done=False)
            if latest is not None and not again:
                assert latest.finished_at is not None
                earlier = "" if latest.name == name else f" as {latest.name}"
                raise AlreadyImported(
                    f"{name} was already imported{earlier} on {_when(latest.finished_at)} "
                    f"({latest.added} memories); pass --again to import it once more",
                    run=latest,
                )
            cursor = conn.execute(
                "INSERT INTO imports (content_hash, name, total, started_at, vectors_done) "
                "VALUES (?,?,?,?,0)",
                (content_hash, name, total, self.now()),
            )
            created = conn.execute("SELECT * FROM imports WHERE id=?",
                                   (cursor.lastrowid,)).fetchone()
        return _row_to_run(created)

    def finish_import(self, run: ImportRun) -> None:
        """Record that the run got through its final vector step."""
        with self._write() as conn:
            conn.execute("UPDATE imports SET vectors_done=1 WHERE id=?", (run.id,))

    def import_runs(self) -> builtins.list[ImportRun]:
        """Every recorded import run, oldest first."""
        with self._lock:
            rows = self.conn.execute("SELECT * FROM imports ORDER BY id").fetchall()
        return [_row_to_run(r) for r in rows]

    def _advance_run(
        self, conn: sqlite3.Connection, run: ImportRun, expected: int, lines: int, added: int
    ) -> None:
        """Count a batch as committed, in the batch's own transaction."""
        row = conn.execute("SELECT committed FROM imports WHERE id=?", (run.id,)).fetchone()
        if row is None or int(row[0]) != expected:
            # Another process is importing the same content (or forget-all erased the run):
            # storing this batch would double lines or resurrect erased memories.
            raise ConcurrentChange(
                f"another import of {run.name} changed its progress meanwhile; "
                "nothing more was stored by this one",
                hint="wait for the other `brain memory import` to finish, then run this one again",
            )
        committed = expected + lines
        conn.execute(
            "UPDATE imports SET committed=?, added=added+?, finished_at=? WHERE id=?",
            (committed, added, self.now() if committed >= run.total else None, run.id),
        )

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
        """Bulk insert (import): one transaction and one embedding batch per `batch_size`.

        With `dedup_threshold`, an item whose similarity to an active memory (or an earlier
        item) reaches it is skipped. With `run` (see `begin_import`), `items` are all the run's
        lines: the first `run.committed` are already stored and are not stored again, and every
        batch advances the run's committed count in the transaction that stores it.
        """
        checked = [self._check_new(item, actor=actor) for item in items]
        if run is not None and run.total != len(checked):
            raise ValueError(f"import run {run.id} has {run.total} lines, got {len(checked)}")
        already = run.committed if run is not None else 0
        added = skipped = 0
        done = already
        for start in range(already, len(checked), batch_size):
            batch = checked[start : start + batch_size]
            docs = [
                embedding_text(n.text, type=n.type, key=n.key, context=n.context,
                               created_at=n.created_at)
                for n in batch
            ]
            vectors = self.embedder().embed_documents(docs)
            keep = list(range(len(batch)))
            if dedup_threshold is not None:
                keep = self._dedup_batch(vectors, dedup_threshold)
                skipped += len(batch) - len(keep)
            stored: list[tuple[Memory, str]] = []
            with self._write() as conn:
                for i in keep:
                    stored.append((self._insert(conn, batch[i], actor), batch[i].context))
                self._index_keywords(stored)
                if run is not None:
                    self._advance_run(conn, run, start, len(batch), len(stored))
            # A kill here leaves the rows `pending`: `sync_vectors()` writes their vectors later.
            if stored:
                self._upsert_vectors([m for m, _ in stored], vectors[keep])
            added += len(stored)
            done += len(batch)
            if progress:
                progress(done, len(checked))
        return ImportReport(added=added, skipped_duplicates=skipped, already_stored=already)

    def _dedup_batch(self, vectors: np.ndarray, threshold: float) -> builtins.list[int]:
        keep: list[int] = []
        for i, vec in enumerate(vectors):
            hits = self.dense_candidates(vec, 1)
            if hits and hits[0][1] >= threshold:
                continue
            if keep and float(np.max(vectors[keep] @ vec)) >= threshold:
                continue
            keep.append(i)
        return keep

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
        memory_id = self.resolve_id(id_or_prefix)
        with self._write() as conn:
            memory = self._fetch(conn, memory_id)
            # An edit of the text alone is read with the memory's key (`bank_pin` + "4821").
            checked = self._check_new(NewMemory(text=text, key=key, evidence=tuple(evidence)),
                                      actor=actor, current_key=memory.key)
            changes: dict[str, Any] = {"text": checked.text}
            if key is not None:
                changes["key"] = checked.key
            if actor is Actor.USER:
                changes["edited_by_user"] = 1
            if memory.status is not MemoryStatus.ACTIVE:
                changes["status"] = MemoryStatus.ACTIVE.value
            event = Event.EDIT_BY_USER if actor is Actor.USER else Event.UPDATE
            updated = self._apply(conn, memory, changes, event=event, actor=actor,
                                  expected_version=expected_version)
            self._profile_follows(conn, memory_id, erased=False)
        self._after_write()
        return updated

    def delete(self, id_or_prefix: str, *, actor: Actor = Actor.USER) -> Memory:
        """Mark deleted (kept for undo and history until forget-all)."""
        memory_id = self.resolve_id(id_or_prefix)
        with self._write() as conn:
            memory = self._fetch(conn, memory_id)
            if memory.status is MemoryStatus.DELETED:
                raise UserError(f"memory {memory_id} is already deleted",
                                hint=f"`brain memory undo {memory_id}` restores it")
            updated = self._apply(conn, memory, {"status": MemoryStatus.DELETED.value},
                                  event=Event.DELETE, actor=actor)
            self._profile_follows(conn, memory_id, erased=False)
        return updated

    def pin(self, id_or_prefix: str, pinned: bool = True) -> Memory:
        memory_id = self.resolve_id(id_or_prefix)
        with self._write() as conn:
            memory = self._fetch(conn, memory_id)
            if memory.pinned == pinned:
                return memory
            changes: dict[str, Any] = {"pinned": int(pinned)}
            if pinned and memory.status is MemoryStatus.ARCHIVED:
                changes["status"] = MemoryStatus.ACTIVE.value
            updated = self._apply(conn, memory, changes,
                                  event=Event.PIN if pinned else Event.UNPIN, actor=Actor.USER)
        self._after_write()
        return updated

    def supersede(
        self,
        old_id: str,
        new: NewMemory,
        *,
        actor: Actor = Actor.ASSISTANT,
        expected_version: int | None = None,
    ) -> Memory:
        """Store `new` and mark `old_id` superseded by it (linked), in one transaction."""
        new = self._check_new(new, actor=actor)
        with self._write() as conn:
            old = self._fetch(conn, old_id)
            if expected_version is not None and old.version != expected_version:
                raise ConcurrentChange(
                    f"memory {old.id} changed since it was read; the newer change was kept"
                )
            if old.status is not MemoryStatus.ACTIVE:
                raise ConcurrentChange(f"memory {old.id} is no longer active")
            created = self._insert(conn, new, actor)
            self._index_keywords([(created, new.context)])
            self._apply(conn, old, {"status": MemoryStatus.SUPERSEDED.value,
                                    "superseded_by": created.id},
                        event=Event.SUPERSEDE, actor=actor)
        self._after_write()
        return created

    def archive(self, ids: Sequence[str], *, actor: Actor = Actor.ASSISTANT) -> int:
        """Capacity limit: archive active, unpinned memories (reversible with undo/restore)."""
        count = 0
        with self._write() as conn:
            for memory_id in ids:
                memory = self._fetch(conn, memory_id)
                if memory.pinned or memory.status is not MemoryStatus.ACTIVE:
                    continue
                self._apply(conn, memory, {"status": MemoryStatus.ARCHIVED.value},
                            event=Event.ARCHIVE, actor=actor)
                count += 1
        return count

    def mark_used(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        now = self.now()
        with self._write() as conn:
            conn.executemany(
                "UPDATE memories SET last_used_at=?, use_count=use_count+1 WHERE id=?",
                [(now, i) for i in ids],
            )

    def undo(self, id_or_prefix: str, *, expected_version: int | None = None) -> Memory:
        """Restore the state before the latest change not yet undone; repeatable.

        With `expected_version` (the `version` of the memory a change returned), only that very
        change is undone: if anything changed the memory since, nothing is and ConcurrentChange
        says so. The memory pane uses it so `u` brings back exactly what `d` deleted, whatever
        the cursor or another process did meanwhile.
        """
        if id_or_prefix.strip().lower() == PROFILE_ID:
            raise UserError("the profile is not a memory",
                            hint="use `undo_profile()` / `brain memory undo profile`")
        memory_id = self.resolve_id(id_or_prefix)
        with self._write() as conn:
            memory = self._fetch(conn, memory_id)
            if expected_version is not None and memory.version != expected_version:
                raise ConcurrentChange(
                    f"memory {memory_id} changed since (version {memory.version}, expected "
                    f"{expected_version}); nothing was undone",
                    hint=f"`brain memory history {memory_id}` shows what changed",
                )
            row = conn.execute(
                "SELECT seq, event, old_state FROM history WHERE memory_id=? AND undone=0 "
                "AND event != ? ORDER BY seq DESC LIMIT 1",
                (memory_id, Event.RESTORE.value),
            ).fetchone()
            if row is None:
                raise NothingToUndo(f"nothing to undo for memory {memory_id}")
            restored = self._undo_row(conn, memory, row)
        self._after_write()
        return restored

    def undo_change(self, change_id: int) -> Memory:
        """Undo one history entry (`HistoryEvent.seq`): the change it records must still be the
        memory's latest; otherwise nothing is undone and ConcurrentChange names the memory."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT seq, memory_id, event, old_state, undone FROM history WHERE seq=?",
                (change_id,),
            ).fetchone()
            if row is None or row["memory_id"] == PROFILE_ID:
                raise NothingToUndo(f"no memory change {change_id}")
            if row["undone"] or row["event"] == Event.RESTORE.value:
                raise NothingToUndo(f"change {change_id} to memory {row['memory_id']} was "
                                    "already undone")
            later = conn.execute(
                "SELECT event FROM history WHERE memory_id=? AND seq>? AND undone=0 AND "
                "event != ? ORDER BY seq LIMIT 1",
                (row["memory_id"], change_id, Event.RESTORE.value),
            ).fetchone()
            if later is not None:  # (later changes already undone are no obstacle)
                raise ConcurrentChange(
                    f"memory {row['memory_id']} changed after that ({later['event']}); "
                    "nothing was undone",
                    hint=f"`brain memory history {row['memory_id']}` shows what changed",
                )
            memory = self._fetch(conn, row["memory_id"])
            restored = self._undo_row(conn, memory, row)
        self._after_write()
        return restored

    def undo_last(self) -> tuple[Memory, Event]:
        """Undo the most recent change to any memory (`brain memory undo` without an id);
        returns the memory as restored and the kind of change undone."""
        with self._lock:
            row = self.conn.execute(
                "SELECT seq, event FROM history WHERE undone=0 AND event != ? AND memory_id != ? "
                "ORDER BY seq DESC LIMIT 1",
                (Event.RESTORE.value, PROFILE_ID),
            ).fetchone()
        if row is None:
            raise NothingToUndo("no memory change to undo")
        return self.undo_change(int(row["seq"])), Event(row["event"])

    def latest_change(self, id_or_prefix: str) -> HistoryEvent | None:
        """The memory's latest change that can still be undone (its `seq` is the change id)."""
        events = [e for e in self.history(id_or_prefix)
                  if not e.undone and e.event is not Event.RESTORE]
        return events[-1] if events else None

    def _undo_row(self, conn: sqlite3.Connection, memory: Memory, row: sqlite3.Row) -> Memory:
        """Revert the change `row` records (the memory's latest), inside the caller's write."""
        memory_id = memory.id
        conn.execute("UPDATE history SET undone=1 WHERE seq=?", (row["seq"],))
        if row["event"] == Event.ADD.value:
            restored = self._apply(conn, memory, {"status": MemoryStatus.DELETED.value},
                                   event=Event.DELETE, actor=Actor.USER, undone=True)
            # Undoing a replacement brings back what it replaced.
            for prev in conn.execute(
                "SELECT id FROM memories WHERE superseded_by=? AND status=?",
                (memory_id, MemoryStatus.SUPERSEDED.value),
            ).fetchall():
                old = self._fetch(conn, prev[0])
                self._apply(conn, old, {"status": MemoryStatus.ACTIVE.value,
                                        "superseded_by": None},
                            event=Event.RESTORE, actor=Actor.USER, undone=True)
            return restored
        state = json.loads(row["old_state"])
        changes = {k: state[k] for k in _STATE_FIELDS if k in state}
        restored = self._apply(conn, memory, changes, event=Event.RESTORE,
                               actor=Actor.USER, undone=True)
        if row["event"] == Event.SUPERSEDE.value and memory.superseded_by:
            # The memory is current again; its replacement steps back.
            successor = self._fetch(conn, memory.superseded_by)
            if successor.status is MemoryStatus.ACTIVE:
                self._apply(conn, successor, {"status": MemoryStatus.SUPERSEDED.value,
                                              "superseded_by": memory_id},
                            event=Event.SUPERSEDE, actor=Actor.USER, undone=True)
        return restored

    # --- vectors ------------------------------------------------------------------------------

    def _upsert_vectors(self, memories: Sequence[Memory], vectors: np.ndarray) -> None:
        self.vectors().upsert(
            [m.id for m in memories], vectors, [{"type": m.type.value} for m in memories]
        )
        with self._write() as conn:
            conn.executemany(
                "UPDATE memories SET vec_state='ok' WHERE id=? AND status=?",
                [(m.id, MemoryStatus.ACTIVE.value) for m in memories],
            )

    def _after_write(self) -> None:
        if self.eager_vectors:
            self.sync_vectors()

    def sync_vectors(self, batch_size: int = 256) -> int:
        """Write pending vectors and remove stale ones; returns how many rows were fixed."""
        # `vec_state != 'ok'` repeats the partial index's condition so SQLite may use it: without
        # it both reads scanned the table on every search (9 ms at 10k memories; issue 25).
        with self._lock:
            stale = [r[0] for r in self.conn.execute(
                "SELECT id FROM memories WHERE vec_state='stale' AND vec_state != 'ok'")]
            pending = self.conn.execute(
                "SELECT id, context FROM memories WHERE vec_state='pending' "
                "AND vec_state != 'ok' AND status=?",
                (MemoryStatus.ACTIVE.value,),
            ).fetchall()
        if not stale and not pending:
            return 0
        if stale:
            self.vectors().delete(stale)
            with self._write() as conn:
                conn.executemany(
                    "UPDATE memories SET vec_state='none' WHERE id=? AND vec_state='stale'",
                    [(i,) for i in stale],
                )
        for start in range(0, len(pending), batch_size):
            part = pending[start : start + batch_size]
            found = self.get_many([r[0] for r in part])
            memories = [found[r[0]] for r in part if r[0] in found]
            contexts = {r[0]: r[1] for r in part}
            docs = [
                embedding_text(m.text, type=m.type, key=m.key, context=contexts[m.id],
                               created_at=m.created_at)
                for m in memories
            ]
            if memories:
                self._upsert_vectors(memories, self.embedder().embed_documents(docs))
        return len(stale) + len(pending)

    def rebuild_vectors(self) -> int:
        """Recreate the Chroma collection from SQLite (e.g. after changing embedding model)."""
        self.vectors().drop()
        with self._lock:
            self._vectors = None
        with self._write() as conn:
            conn.execute("UPDATE memories SET vec_state='none'")
            conn.execute("UPDATE memories SET vec_state='pending' WHERE status=?",
                         (MemoryStatus.ACTIVE.value,))
        return self.sync_vectors()

    def dense_candidates(
        self, query_vector: np.ndarray, k: int
    ) -> builtins.list[tuple[str, float]]:
        if k <= 0:
            return []
        vectors = self.vectors()  # opening may find the collection empty and queue re-embedding
        self.sync_vectors()
        return vectors.query(query_vector, k)

    def cosines(self, query_vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Exact cosine of stored memory vectors to the query (ids without a vector are absent)."""
        if not ids:
            return {}
        stored = self.vectors().get_embeddings(list(ids))
        return {i: float(np.asarray(v, dtype=np.float32) @ query_vector) for i, v in stored.items()}

    def keyword_candidates(self, query: str, k: int) -> builtins.list[tuple[str, float]]:
        if k <= 0 or not query.strip():
            return []
        with self._lock:
            return self.keywords.search(query, k)

    # --- profile ------------------------------------------------------------------------------

    def profile(self) -> Profile:
        with self._lock:
            row = self.conn.execute(
                "SELECT text, updated_at, edited_by_user, pending_text FROM profile WHERE id=1"
            ).fetchone()
        if row is None:
            return Profile(text="", updated_at=None, edited_by_user=False, pending_text=None)
        return Profile(row["text"], row["updated_at"], bool(row["edited_by_user"]),
                       row["pending_text"])

    def set_profile(self, text: str, *, actor: Actor,
                    sources: Sequence[str] | None = None) -> Profile:
        """Write the profile. A model rewrite of a user-edited profile is only proposed.
        `sources`: the memories a model rewrite was built from (see `_profile_follows`)."""
        text = text.strip()
        finding = find_secret(text)
        if finding:
            raise SecretRejected(f"profile not saved: {finding.message()}")
        current = self.profile()
        with self._write() as conn:
            if actor is Actor.ASSISTANT and current.edited_by_user:
                conn.execute("UPDATE profile SET pending_text=? WHERE id=1", (text,))
            else:
                conn.execute(
                    "INSERT INTO profile (id, text, updated_at, edited_by_user, pending_text, "
                    "sources) VALUES (1,?,?,?,NULL,?) ON CONFLICT(id) DO UPDATE SET "
                    "text=excluded.text, updated_at=excluded.updated_at, "
                    "edited_by_user=excluded.edited_by_user, pending_text=NULL, "
                    "sources=excluded.sources",
                    (text, self.now(), int(actor is Actor.USER),
                     None if sources is None or actor is Actor.USER
                     else json.dumps(sorted(sources))),
                )
                conn.execute(
                    "INSERT INTO history (memory_id, event, old_text, new_text, actor, at) "
                    "VALUES (?,?,?,?,?,?)",
                    (PROFILE_ID, (Event.EDIT_BY_USER if actor is Actor.USER else Event.UPDATE)
                     .value, current.text, text, actor.value, self.now()),
                )
        return self.profile()

    def _profile_follows(self, conn: sqlite3.Connection, memory_id: str, *,
                         erased: bool) -> None:
        """Derived text follows its source. A memory was edited, deleted (`erased=False`) or
        erased for good: a model-written profile built from it is stale, so it is emptied
        (the next refresh writes a new one; until then no prompt carries the old words), and a
        proposed rewrite is dropped. A profile the user typed is the user's own text and stays.
        An erasure also drops the profile's earlier versions (its undo history), which may
        quote the memory; an edit or delete keeps them, as both can be undone."""
        row = conn.execute(
            "SELECT text, edited_by_user, pending_text, sources FROM profile WHERE id=1"
        ).fetchone()
        if row is None:
            return
        sources = json.loads(row["sources"]) if row["sources"] else None
        used = sources is None or memory_id in sources
        if row["pending_text"] is not None:
            conn.execute("UPDATE profile SET pending_text=NULL WHERE id=1")
        if used and row["text"] and not row["edited_by_user"]:
            conn.execute("UPDATE profile SET text='', sources=NULL, updated_at=? WHERE id=1",
                         (self.now(),))
            if not erased:
                conn.execute(
                    "INSERT INTO history (memory_id, event, old_text, new_text, actor, at) "
                    "VALUES (?,?,?,?,?,?)",
                    (PROFILE_ID, Event.UPDATE.value, row["text"], "", Actor.ASSISTANT.value,
                     self.now()))
        if erased:
            conn.execute("DELETE FROM history WHERE memory_id=?", (PROFILE_ID,))

    def undo_profile(self) -> Profile:
        """Put back the profile text from before its latest change."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT seq, old_text FROM history WHERE memory_id=? AND undone=0 "
                "AND event != ? ORDER BY seq DESC LIMIT 1",
                (PROFILE_ID, Event.RESTORE.value),
            ).fetchone()
            if row is None:
                raise NothingToUndo("nothing to undo for the profile")
            current = conn.execute("SELECT text FROM profile WHERE id=1").fetchone()
            conn.execute("UPDATE history SET undone=1 WHERE seq=?", (row["seq"],))
            conn.execute("UPDATE profile SET text=?, updated_at=?, pending_text=NULL WHERE id=1",
                         (row["old_text"] or "", self.now()))
            conn.execute(
                "INSERT INTO history (memory_id, event, old_text, new_text, actor, at, undone) "
                "VALUES (?,?,?,?,?,?,1)",
                (PROFILE_ID, Event.RESTORE.value, current[0] if current else "",
                 row["old_text"] or "", Actor.USER.value, self.now()),
            )
        return self.profile()

    def accept_pending_profile(self) -> Profile:
        pending = self.profile().pending_text
        if pending is None:
            raise UserError("there is no proposed profile rewrite to accept")
        with self._write() as conn:
            conn.execute("UPDATE profile SET edited_by_user=0 WHERE id=1")
        return self.set_profile(pending, actor=Actor.ASSISTANT)

    # --- export and erase ---------------------------------------------------------------------

    def export_rows(self, *, include_inactive: bool = False) -> Iterator[dict[str, Any]]:
        statuses = None if include_inactive else (MemoryStatus.ACTIVE,)
        for memory in reversed(self.list(statuses=statuses)):
            yield {
                "text": memory.text,
                "type": memory.type.value,
                "key": memory.key,
                "created_at": memory.created_at,
                "source": memory.source,
                "importance": memory.importance,
                "confidence": memory.confidence,
                "pinned": memory.pinned,
                "id": memory.id,
                "status": memory.status.value,
                "updated_at": memory.updated_at,
            }

    def derived_texts(self, ids: Sequence[str] | None = None) -> set[str]:
        """Every text the store may have embedded for these memories (all when None), in every
        version their history records: to erase what older releases cached on disk."""
        with self._lock:
            if ids is None:
                rows = self.conn.execute(
                    "SELECT id, type, key, text, context, created_at FROM memories").fetchall()
            else:
                rows = []
                for start in range(0, len(ids), 500):
                    part = list(ids[start : start + 500])
                    rows += self.conn.execute(
                        "SELECT id, type, key, text, context, created_at FROM memories WHERE "
                        f"id IN ({','.join('?' * len(part))})", part).fetchall()
            texts: set[str] = set()
            for row in rows:
                versions = {(row["text"], row["type"], row["key"])}
                for event in self.conn.execute(
                    "SELECT old_text, new_text, old_state FROM history WHERE memory_id=?",
                    (row["id"],),
                ):
                    state = json.loads(event["old_state"]) if event["old_state"] else {}
                    kind = state.get("type", row["type"])
                    key = state.get("key", row["key"])
                    versions |= {(t, kind, key) for t in (event["old_text"], event["new_text"])
                                 if t}
                for text, kind, key in versions:
                    texts.add(text)
                    texts.add(embedding_text(text, type=MemoryType(kind), key=key,
                                             context=row["context"],
                                             created_at=row["created_at"]))
        return texts

    def purge(self, id_or_prefix: str) -> Memory:
        """Erase one memory for good — its row, history, keyword entry and vector — and scrub
        the files so nothing of it remains (no undo). Returns it as it was."""
        memory_id = self.resolve_id(id_or_prefix)
        with self._lock:
            memory = self._fetch(self.conn, memory_id)
        self.erase(memory_id)
        return memory

    def erase(self, memory_id: str) -> bool:
        """`purge` by exact id, idempotent: what is left of the memory goes (the vector and
        the scrub even when the row went before a crash). Returns whether the row was there."""
        with self._lock:
            with self._write() as conn:
                found = conn.execute("DELETE FROM memories WHERE id=?", (memory_id,)).rowcount
                conn.execute("DELETE FROM history WHERE memory_id=?", (memory_id,))
                conn.execute("UPDATE memories SET superseded_by=NULL WHERE superseded_by=?",
                             (memory_id,))
                self.keywords.delete([memory_id])
                self._profile_follows(conn, memory_id, erased=True)
            vectors = self.vectors()
            vectors.delete([memory_id])
            vectors.compact()  # Chroma keeps a deleted vector's bytes until rewritten
            self._scrub()
        return bool(found)

    def _scrub(self) -> None:
        from indexing.scrub import scrub_connection

        self.keywords.optimize()
        scrub_connection(self.conn, label=f"memory database {self.db_path}")

    def forget_all(self) -> int:
        """Erase every memory, its history, its vectors and keyword rows; leave nothing on disk."""
        with self._lock:
            count = self.count(None)
            self.vectors().drop()
            self._vectors = None
            with self._write() as conn:
                conn.execute("DELETE FROM memories")
                conn.execute("DELETE FROM history")
                conn.execute("DELETE FROM profile")
                conn.execute("DELETE FROM counters")
                conn.execute("DELETE FROM imports")
                # Dropping (not emptying) the FTS tables leaves no tokens in old FTS segments;
                # virtual tables first (that drops their shadow tables), then the side tables.
                prefix = KEYWORD_TABLE.replace("_", "\\_") + "%"
                for virtual in (True, False):
                    names = [r[0] for r in conn.execute(
                        "SELECT name FROM sqlite_master WHERE type='table' AND name LIKE ? "
                        "ESCAPE '\\' AND (sql LIKE 'CREATE VIRTUAL%') = ? ORDER BY name DESC",
                        (prefix, virtual),
                    )]
                    for name in names:
                        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
                self.keywords = self._keywords_factory(conn, KEYWORD_TABLE)
            self._scrub()
        return count
