"""The one SQLite open-and-migrate runner every store uses (indexing/sqlite_db.py)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from indexing.errors import HintedError
from indexing.sqlite_db import Schema, open_database, schema_version


class StoreError(HintedError):
    pass


STEPS = (
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
    "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX notes_pinned ON notes(pinned)",
)


def open_notes(path: Path, steps: tuple[str, ...] = STEPS) -> sqlite3.Connection:
    return open_database(path, Schema("notes database", steps), error=StoreError,
                         damaged_hint="move it away")


def test_a_new_database_gets_every_step(tmp_path: Path) -> None:
    conn = open_notes(tmp_path / "n.db")
    assert schema_version(conn) == 2
    conn.execute("INSERT INTO notes (text, pinned) VALUES ('x', 1)")
    conn.close()


def test_an_old_database_is_upgraded_keeping_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    conn = open_notes(path, STEPS[:1])
    conn.execute("INSERT INTO notes (text) VALUES ('kept')")
    conn.close()
    conn = open_notes(path)
    assert schema_version(conn) == 2
    assert conn.execute("SELECT text, pinned FROM notes").fetchall() == [("kept", 0)]
    conn.close()


def test_a_failing_step_leaves_the_previous_version_intact(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    open_notes(path, STEPS[:1]).close()
    broken = (STEPS[0], "ALTER TABLE notes ADD COLUMN pinned INTEGER;CREATE TABLE notes (x)")
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        open_notes(path, broken)
    conn = sqlite3.connect(path)
    assert schema_version(conn) == 1
    columns = [row[1] for row in conn.execute("PRAGMA table_info(notes)")]
    assert columns == ["id", "text"]  # the half-applied step was rolled back
    conn.close()


def test_a_newer_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    conn = open_notes(path)
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    with pytest.raises(StoreError, match="newer than this second-brain understands") as info:
        open_notes(path)
    assert info.value.hint and "upgrade" in info.value.hint
    conn = sqlite3.connect(path)
    assert schema_version(conn) == 7
    conn.close()


def test_a_damaged_file_is_the_stores_error_with_its_hint(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open the notes database") as info:
        open_notes(path)
    assert info.value.hint == "move it away"


def test_adopt_reads_a_legacy_version_once(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    legacy = sqlite3.connect(path)
    legacy.execute(STEPS[0])
    legacy.execute("CREATE TABLE old_versions (v INTEGER)")
    legacy.execute("INSERT INTO old_versions VALUES (1)")
    legacy.commit()
    legacy.close()
    calls: list[int] = []

    def adopt(conn: sqlite3.Connection) -> int:
        calls.append(1)
        version = conn.execute("SELECT MAX(v) FROM old_versions").fetchone()[0]
        conn.execute("DROP TABLE old_versions")
        return int(version)

    schema = Schema("notes database", STEPS, adopt=adopt)
    conn = open_database(path, schema, error=StoreError, damaged_hint="")
    assert schema_version(conn) == 2 and calls == [1]
    conn.close()
    conn = open_database(path, schema, error=StoreError, damaged_hint="")
    assert calls == [1]  # user_version is set now: adopt is not asked again
    conn.close()


def test_processes_opening_a_new_home_at_once_apply_each_step_once(tmp_path: Path) -> None:
    """The version is re-read under the write lock: the second opener skips the steps the
    first one applied while it waited (a CREATE TABLE run twice would fail)."""
    path = tmp_path / "n.db"
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def opener() -> None:
        start.wait()
        try:
            open_notes(path).close()
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    conn = sqlite3.connect(path)
    assert schema_version(conn) == 2
    conn.close()


def test_every_store_uses_the_runner(tmp_path: Path) -> None:
    """Sessions, memories, the manifest and the retrieval log all keep their schema in
    user_version, brought up to date by this module."""
    from assistant.memory.store import SCHEMA as MEMORIES
    from assistant.memory.store import MemoryStore
    from assistant.retrieval.log import SCHEMA as LOG
    from assistant.retrieval.log import RetrievalLog
    from assistant.sessions.schema import SCHEMA as SESSIONS
    from assistant.sessions.store import SessionStore
    from indexing.manifest import SCHEMA as MANIFEST
    from indexing.manifest import Manifest
    from tests.fakes import HashEmbedder
    from tests.fixtures.memory import MemoryVectors

    SessionStore.open(tmp_path / "s.db").close()
    MemoryStore(tmp_path / "m.db", embedder=lambda: HashEmbedder(dimension=8),
                vectors=MemoryVectors).close()
    RetrievalLog.open(tmp_path / "l.db").close()
    Manifest.open(tmp_path / "k.db").close()
    for name, schema in (("s", SESSIONS), ("m", MEMORIES), ("l", LOG), ("k", MANIFEST)):
        conn = sqlite3.connect(tmp_path / f"{name}.db")
        assert schema_version(conn) == schema.version >= 1, name
        conn.close()


def _wal_notes(path: Path) -> sqlite3.Connection:
    return open_database(path, Schema("notes database", STEPS), error=StoreError,
                         damaged_hint="move it away", pragmas=("journal_mode=WAL",))


def test_a_folder_it_cannot_write_is_read_without_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only home (issue 22): the database opens read-only, with its WAL gone (immutable)
    or left by a writer that still has it open (mode=ro reads it); writes fail as read-only."""
    path = tmp_path / "n.db"
    conn = _wal_notes(path)
    conn.execute("INSERT INTO notes (text) VALUES ('checkpointed')")
    conn.close()  # the last connection: the WAL is folded in and removed
    assert not Path(f"{path}-wal").exists()
    monkeypatch.setattr("indexing.sqlite_db.can_write", lambda directory: False)
    reader = _wal_notes(path)
    assert reader.execute("SELECT text FROM notes").fetchall() == [("checkpointed",)]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("INSERT INTO notes (text) VALUES ('no')")
    reader.close()
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()

    monkeypatch.undo()
    writer = _wal_notes(path)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO notes (text) VALUES ('in the wal')")
    monkeypatch.setattr("indexing.sqlite_db.can_write", lambda directory: False)
    try:
        reader = _wal_notes(path)
        assert [r[0] for r in reader.execute("SELECT text FROM notes ORDER BY id")] == [
            "checkpointed", "in the wal"]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader.execute("DELETE FROM notes")
        reader.close()
    finally:
        writer.close()
