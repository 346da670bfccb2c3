"""One resumable import run, shared by `brain memory import` and `brain sessions import`.

Each import is recorded as a run under the hash of its parsed content: `committed` of its
`total` lines are stored, in file order. Each batch stores its lines and advances the run in the
caller's one transaction (`advance`), so a killed import resumes exactly where its last batch
ended and never stores a line twice; a finished run refuses the same content again unless
`again` (`begin`). Times are Unix seconds (REAL columns) in both stores' tables.

The table and the words of the messages are the caller's (`RunTable`); the SQL here names only
the columns every run table has. Below `memory/` and `conversations/`, so both can use it.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, replace

from assistant.errors import UserError


@dataclass(frozen=True, slots=True)
class RunTable:
    """Where one kind of import keeps its runs, and how its messages name things."""

    table: str  # a constant of the caller's schema, never user text
    unit: str  # what a run's `added` counts, in the refusal: "memories", "turns"
    command: str  # the command a conflict tells the user to wait for
    # The column saying a run got through its final step after its last commit (memory's
    # vector upsert), or None when the table has none (then every run counts as through it).
    final_step: str | None = None


@dataclass(frozen=True, slots=True)
class ImportRun:
    """One run of an import: `committed` of its `total` lines are stored (in file order)."""

    id: int
    content_hash: str
    name: str
    total: int
    committed: int
    added: int
    started_at: float  # Unix seconds
    finished_at: float | None  # set by the batch that commits the last line
    final_step_done: bool = True  # see `RunTable.final_step`

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class AlreadyImported(UserError):
    """The same content was imported in full before (importing it again needs `again`)."""

    def __init__(self, message: str, *, run: ImportRun) -> None:
        super().__init__(message)
        self.run = run


class ImportConflict(UserError):
    """Another import of the same content moved the run's progress meanwhile."""


def _columns(spec: RunTable) -> str:
    final = spec.final_step or "1"
    return f"id, content_hash, name, total, committed, added, started_at, finished_at, {final}"


def _run(row: sqlite3.Row) -> ImportRun:  # the columns of `_columns`, in order
    finished = row[7]
    return ImportRun(
        id=int(row[0]), content_hash=str(row[1]), name=str(row[2]), total=int(row[3]),
        committed=int(row[4]), added=int(row[5]), started_at=float(row[6]),
        finished_at=None if finished is None else float(finished),
        final_step_done=bool(row[8]),
    )


def when(seconds: float) -> str:
    """A run's time as its messages show it: UTC to the minute, the same on every machine."""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds)) + " UTC"


def begin(
    conn: sqlite3.Connection, spec: RunTable, content_hash: str, *, name: str, total: int,
    again: bool, now: float,
) -> ImportRun:
    """The run an import of this content carries on: its unfinished run (resume) or a new one.

    Call inside one write transaction. Raises `AlreadyImported` if the content was imported in
    full and `again` is False. An interrupted run is resumed even with `again`, so re-running a
    killed `--again` import converges too. A resumed run has its final step still to do.
    """
    row = conn.execute(
        f"SELECT {_columns(spec)} FROM {spec.table} WHERE content_hash=? "
        "ORDER BY id DESC LIMIT 1", (content_hash,),
    ).fetchone()
    latest = _run(row) if row else None
    if latest is not None and not latest.finished:
        if spec.final_step is not None and latest.final_step_done:
            # A run from before the column (its default said "done"): its final step is due.
            conn.execute(f"UPDATE {spec.table} SET {spec.final_step}=0 WHERE id=?",
                         (latest.id,))
        return replace(latest, final_step_done=spec.final_step is None)
    if latest is not None and not again:
        assert latest.finished_at is not None
        earlier = "" if latest.name == name else f" as {latest.name}"
        raise AlreadyImported(
            f"{name} was already imported{earlier} on {when(latest.finished_at)} "
            f"({latest.added} {spec.unit}); pass --again to import it once more",
            run=latest,
        )
    if spec.final_step is None:
        cursor = conn.execute(
            f"INSERT INTO {spec.table} (content_hash, name, total, started_at) VALUES (?,?,?,?)",
            (content_hash, name, total, now))
    else:
        cursor = conn.execute(
            f"INSERT INTO {spec.table} (content_hash, name, total, started_at, "
            f"{spec.final_step}) VALUES (?,?,?,?,0)", (content_hash, name, total, now))
    return ImportRun(int(cursor.lastrowid or 0), content_hash, name, total, 0, 0, now, None,
                     final_step_done=spec.final_step is None)


def advance(
    conn: sqlite3.Connection, spec: RunTable, run: ImportRun, *, expected: int, lines: int,
    added: int, now: float,
) -> None:
    """Count a batch of `lines` (`added` of them stored) as committed, in the transaction that
    stores it. Raises `ImportConflict` (so the caller's transaction rolls back) unless the run
    is still at `expected`."""
    row = conn.execute(f"SELECT committed FROM {spec.table} WHERE id=?", (run.id,)).fetchone()
    if row is None or int(row[0]) != expected:
        # Another process is importing the same content (or forget-all erased the run):
        # storing this batch would double lines or resurrect erased rows.
        raise ImportConflict(
            f"another import of {run.name} changed its progress meanwhile; "
            "nothing more was stored by this one",
            hint=f"wait for the other `{spec.command}` to finish, then run this one again",
        )
    committed = expected + lines
    conn.execute(
        f"UPDATE {spec.table} SET committed=?, added=added+?, finished_at=? WHERE id=?",
        (committed, added, now if committed >= run.total else None, run.id),
    )


def finish(conn: sqlite3.Connection, spec: RunTable, run: ImportRun) -> None:
    """Record that the run got through its final step (a table without that column has none)."""
    if spec.final_step is not None:
        conn.execute(f"UPDATE {spec.table} SET {spec.final_step}=1 WHERE id=?", (run.id,))


def runs(conn: sqlite3.Connection, spec: RunTable) -> list[ImportRun]:
    """Every recorded run, oldest first."""
    return [_run(r) for r in conn.execute(
        f"SELECT {_columns(spec)} FROM {spec.table} ORDER BY id").fetchall()]
