"""Bulk imports into the store, each recorded as a run in `imports` (content hash, lines
committed): each batch's memories and the run's committed count change in one transaction, so
a killed import resumes exactly where its last batch ended and never stores a line twice.
Reading the JSONL lines is `transfer.py`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from assistant.errors import UserError
from assistant.memory.database import MemoryDatabase
from assistant.memory.document import embedding_text
from assistant.memory.errors import ConcurrentChange
from assistant.memory.model import Actor, Memory, NewMemory
from assistant.memory.vectors import VectorSync
from assistant.memory.write_rules import check_new
from assistant.memory.writes import index_keywords, insert


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


class AlreadyImported(UserError):
    """The same content was imported in full before (importing it again needs `again=True`)."""

    def __init__(self, message: str, *, run: ImportRun) -> None:
        super().__init__(message)
        self.run = run


def _row_to_run(row: sqlite3.Row) -> ImportRun:
    return ImportRun(
        id=int(row["id"]), content_hash=row["content_hash"], name=row["name"],
        total=int(row["total"]), committed=int(row["committed"]), added=int(row["added"]),
        started_at=row["started_at"], finished_at=row["finished_at"],
        vectors_done=bool(row["vectors_done"]),
    )


def _when(iso: str) -> str:
    return iso.replace("T", " ")[:16] + " UTC"


def begin_import(
    db: MemoryDatabase, content_hash: str, *, name: str, total: int, again: bool
) -> ImportRun:
    """The run an import of this content carries on: its unfinished run (resume) or a new one.

    Raises `AlreadyImported` if the content was imported in full and `again` is False. An
    interrupted run is resumed even with `again`, so re-running a killed `--again` import
    converges too.
    """
    with db.write() as conn:
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
            (content_hash, name, total, db.now()),
        )
        created = conn.execute("SELECT * FROM imports WHERE id=?",
                               (cursor.lastrowid,)).fetchone()
    return _row_to_run(created)


def finish_import(db: MemoryDatabase, run: ImportRun) -> None:
    """Record that the run got through its final vector step."""
    with db.write() as conn:
        conn.execute("UPDATE imports SET vectors_done=1 WHERE id=?", (run.id,))


def import_runs(db: MemoryDatabase) -> list[ImportRun]:
    """Every recorded import run, oldest first."""
    with db.lock:
        rows = db.conn.execute("SELECT * FROM imports ORDER BY id").fetchall()
    return [_row_to_run(r) for r in rows]


def _advance_run(
    db: MemoryDatabase, conn: sqlite3.Connection, run: ImportRun, expected: int, lines: int,
    added: int,
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
        (committed, added, db.now() if committed >= run.total else None, run.id),
    )


def add_many(
    db: MemoryDatabase,
    vectors: VectorSync,
    items: Sequence[NewMemory],
    *,
    actor: Actor,
    batch_size: int,
    dedup_threshold: float | None,
    progress: Callable[[int, int], None] | None,
    run: ImportRun | None,
) -> ImportReport:
    """Bulk insert (import): one transaction and one embedding batch per `batch_size`.

    With `dedup_threshold`, an item whose similarity to an active memory (or an earlier
    item) reaches it is skipped. With `run` (see `begin_import`), `items` are all the run's
    lines: the first `run.committed` are already stored and are not stored again, and every
    batch advances the run's committed count in the transaction that stores it.
    """
    checked = [check_new(item, actor=actor) for item in items]
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
        embedded = vectors.embedder().embed_documents(docs)
        keep = list(range(len(batch)))
        if dedup_threshold is not None:
            keep = _dedup_batch(vectors, embedded, dedup_threshold)
            skipped += len(batch) - len(keep)
        stored: list[tuple[Memory, str]] = []
        with db.write() as conn:
            for i in keep:
                stored.append((insert(db, conn, batch[i], actor), batch[i].context))
            index_keywords(db, stored)
            if run is not None:
                _advance_run(db, conn, run, start, len(batch), len(stored))
        # A kill here leaves the rows `pending`: `VectorSync.sync()` writes their vectors later.
        if stored:
            vectors.upsert_vectors([m for m, _ in stored], embedded[keep])
        added += len(stored)
        done += len(batch)
        if progress:
            progress(done, len(checked))
    return ImportReport(added=added, skipped_duplicates=skipped, already_stored=already)


def _dedup_batch(vectors: VectorSync, embedded: np.ndarray, threshold: float) -> list[int]:
    keep: list[int] = []
    for i, vec in enumerate(embedded):
        hits = vectors.dense_candidates(vec, 1)
        if hits and hits[0][1] >= threshold:
            continue
        if keep and float(np.max(embedded[keep] @ vec)) >= threshold:
            continue
        keep.append(i)
    return keep
