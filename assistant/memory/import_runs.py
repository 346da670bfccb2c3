"""Bulk imports into the store, each recorded as a run in `imports` (the shared resumable run
of `assistant/import_run.py`): each batch's memories and the run's committed count
change in one transaction, so a killed import resumes exactly where its last batch ended and
never stores a line twice. Reading the JSONL lines is `transfer.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from assistant import import_run
from assistant.import_run import AlreadyImported, ImportConflict, ImportRun, RunTable
from assistant.memory.database import MemoryDatabase
from assistant.memory.document import embedding_text
from assistant.memory.model import Actor, Memory, NewMemory
from assistant.memory.vectors import VectorSync
from assistant.memory.write_rules import check_new
from assistant.memory.writes import index_keywords, insert

__all__ = ["RUNS", "AlreadyImported", "ImportConflict", "ImportReport", "ImportRun",
           "add_many", "begin_import", "finish_import", "import_runs"]


@dataclass(frozen=True, slots=True)
class ImportReport:
    added: int
    skipped_duplicates: int
    already_stored: int = 0  # lines an interrupted earlier run of the same import committed
    # An earlier run stored every line but was killed in its final vector step: nothing was
    # imported now, `repaired` missing vectors were written.
    finished_earlier: bool = False
    repaired: int = 0


RUNS = RunTable("imports", unit="memories", command="brain memory import",
                final_step="vectors_done")


def begin_import(
    db: MemoryDatabase, content_hash: str, *, name: str, total: int, again: bool
) -> ImportRun:
    """The run an import of this content carries on: its unfinished run (resume) or a new one
    (see `import_run.begin`: `AlreadyImported` for content imported in full unless `again`)."""
    with db.write() as conn:
        return import_run.begin(conn, RUNS, content_hash, name=name, total=total, again=again,
                                now=db.now())


def finish_import(db: MemoryDatabase, run: ImportRun) -> None:
    """Record that the run got through its final vector step."""
    with db.write() as conn:
        import_run.finish(conn, RUNS, run)


def import_runs(db: MemoryDatabase) -> list[ImportRun]:
    """Every recorded import run, oldest first."""
    with db.lock:
        return import_run.runs(db.conn, RUNS)


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
                import_run.advance(conn, RUNS, run, expected=start, lines=len(batch),
                                   added=len(stored), now=db.now())
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
