"""Memory schema step 6: import runs recorded under the old schema (ISO text times) carry on.

The old home is made the way a release before step 6 left it: a run killed after its first
batch, its `imports` row in the shape of steps 2 and 3 (the released steps themselves) with the
ISO times the old code wrote, `user_version` 5. Opening it migrates; the same import resumes.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assistant.memory.clock import to_iso
from assistant.memory.schema import SCHEMA
from assistant.memory.store import AlreadyImported, MemoryStore
from assistant.memory.transfer import import_memories
from tests.fakes import HashEmbedder
from tests.fixtures.memory import FakeClock, MemoryVectors

LINES = [json.dumps({"text": f"The user owns lamp number {i}"}) for i in range(6)]
NOON = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def _store(path: Path, clock: FakeClock, vectors: MemoryVectors) -> MemoryStore:
    embedder = HashEmbedder(dimension=128)
    return MemoryStore(path, embedder=lambda: embedder, vectors=lambda: vectors, clock=clock)


class _Killed(Exception):
    pass


def _old_home(path: Path, clock: FakeClock, vectors: MemoryVectors) -> None:
    """Two of six lines stored, the run unfinished, the database at schema version 5."""
    store = _store(path, clock, vectors)

    def killed_after_first_batch(done: int, total: int) -> None:
        raise _Killed

    try:
        with pytest.raises(_Killed):
            import_memories(store, LINES, name="lamps.jsonl", batch_size=2,
                            progress=killed_after_first_batch)
        rows = store.conn.execute(
            "SELECT id, content_hash, name, total, committed, added, vectors_done "
            "FROM imports").fetchall()
    finally:
        store.close()
    assert [tuple(r)[2:] for r in rows] == [("lamps.jsonl", 6, 2, 2, 0)]
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("DROP TABLE imports")
        conn.executescript(SCHEMA.steps[1] + SCHEMA.steps[2])  # the released old shape
        conn.executemany(
            "INSERT INTO imports (id, content_hash, name, total, committed, added, started_at, "
            "finished_at, vectors_done) VALUES (?,?,?,?,?,?,?,NULL,?)",
            [(*tuple(r)[:6], to_iso(NOON), r[6]) for r in rows])
        conn.execute("PRAGMA user_version = 5")
    finally:
        conn.close()


def test_a_run_interrupted_under_the_old_schema_resumes_under_the_new_one(
        tmp_path: Path) -> None:
    path, clock, vectors = tmp_path / "memory.sqlite3", FakeClock(NOON), MemoryVectors()
    _old_home(path, clock, vectors)
    clock.advance(days=1)
    store = _store(path, clock, vectors)
    try:
        assert int(store.conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA.version
        [old] = store.import_runs()
        assert (old.committed, old.finished, old.started_at) == (2, False, NOON.timestamp())
        resumed: list[int] = []
        report, errors = import_memories(store, LINES, name="lamps.jsonl", batch_size=2,
                                         on_resume=lambda run: resumed.append(run.committed))
        assert not errors and resumed == [2]
        assert (report.added, report.already_stored) == (4, 2)
        assert sorted(m.text for m in store.list()) == sorted(
            json.loads(line)["text"] for line in LINES)  # each line once
        assert vectors.count() == 6
        [done] = store.import_runs()
        assert (done.id, done.committed, done.added, done.final_step_done) == (old.id, 6, 6, True)
        assert done.finished_at == NOON.timestamp() + 86400
        with pytest.raises(AlreadyImported) as refused:
            import_memories(store, LINES, name="lamps.jsonl")
        assert str(refused.value) == (
            "lamps.jsonl was already imported on 2025-01-02 12:00 UTC (6 memories); "
            "pass --again to import it once more")
    finally:
        store.close()


def test_step_6_keeps_finished_runs_their_times_and_the_id_counter(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executescript(";".join(SCHEMA.steps[:5]))
        conn.executemany(
            "INSERT INTO imports (content_hash, name, total, committed, added, started_at, "
            "finished_at, vectors_done) VALUES (?,?,?,?,?,?,?,?)",
            [("a" * 64, "one.jsonl", 3, 3, 3, "2025-01-01T12:00:00Z", "2025-01-01T12:00:07Z", 1),
             ("b" * 64, "gone.jsonl", 1, 1, 1, "2025-01-01T13:00:00Z", "2025-01-01T13:00:00Z",
              1)])
        conn.execute("DELETE FROM imports WHERE name = 'gone.jsonl'")  # the counter stays at 2
        conn.execute("PRAGMA user_version = 5")
    finally:
        conn.close()
    clock = FakeClock(NOON)
    store = _store(path, clock, MemoryVectors())
    try:
        [one] = store.import_runs()
        assert (one.started_at, one.finished_at) == (NOON.timestamp(), NOON.timestamp() + 7)
        with pytest.raises(AlreadyImported, match=r"on 2025-01-01 12:00 UTC \(3 memories\)"):
            store.begin_import("a" * 64, name="one.jsonl", total=3, again=False)
        fresh = store.begin_import("c" * 64, name="new.jsonl", total=1, again=False)
        assert fresh.id == 3  # never the erased run's id again
    finally:
        store.close()
