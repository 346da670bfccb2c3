"""Memory schema step 8: every time of memory.sqlite3 becomes Unix seconds (REAL).

The old home is made the way a release before step 8 left it: the released steps 1-7 and rows
with the ISO text times the old code wrote (`clock.to_iso`). Opening it migrates; the memories,
their history and the profile keep every value, and what the CLI, the TUI and export files show
stays the ISO text it was. The step is one transaction: a migration SIGKILLed before any of its
statements, or inside one, leaves the old database exactly as it was, and the next open
migrates it in full.
"""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from assistant.memory.model import Actor, Event
from assistant.memory.schema import SCHEMA
from assistant.memory.store import MemoryStore
from assistant.memory.transfer import export_memories
from tests.fakes import HashEmbedder
from tests.fixtures.memory import FakeClock, MemoryVectors

ROOT = Path(__file__).resolve().parents[2]
FILLER = 300  # enough rows that a kill can land inside a statement's copy


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def _old_home(path: Path) -> None:
    """Schema version 7, times as ISO text: two memories worth checking and `FILLER` more."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executescript(";".join(SCHEMA.steps[:7]))
        conn.execute("BEGIN")  # one commit, not one per row
        memories = [
            ("aaaa0001", "fact", "city", "The user lives in Lisbon", 1.0, 0.5, "active", 0,
             "2024-05-01T12:00:00Z", "2024-06-01T08:30:00Z", "2024-06-02T09:00:00Z", 3, 2),
            ("aaaa0002", "preference", None, "The user drinks green tea", 0.9, 0.7, "active", 1,
             "2024-05-02T10:00:00Z", "2024-05-02T10:00:00Z", None, 0, 1),
        ] + [
            (f"f{i:07x}", "episode", None, f"Filler memory number {i}", 1.0, 0.5, "active", 0,
             f"2023-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", "2023-02-01T00:00:00Z", None, 0,
             1)
            for i in range(FILLER)
        ]
        conn.executemany(
            "INSERT INTO memories (id, type, key, text, confidence, importance, status, pinned, "
            "created_at, updated_at, last_used_at, use_count, version) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", memories)
        history = [
            ("aaaa0001", "add", None, "The user lives in Porto", "user", "2024-05-01T12:00:00Z",
             None, 0, None),
            ("aaaa0001", "update", "The user lives in Porto", "The user lives in Lisbon", "agent",
             "2024-06-01T08:30:00Z", json.dumps({"text": "The user lives in Porto"}), 0,
             "claude"),
            ("aaaa0002", "add", None, "The user drinks green tea", "assistant",
             "2024-05-02T10:00:00Z", None, 0, None),
            ("aaaa0002", "pin", None, None, "user", "2024-05-02T10:00:00Z", None, 1, None),
        ] + [(f"f{i:07x}", "add", None, f"Filler memory number {i}", "user",
              "2023-01-01T00:00:00Z", None, 0, None) for i in range(FILLER)]
        conn.executemany(
            "INSERT INTO history (memory_id, event, old_text, new_text, actor, at, old_state, "
            "undone, via) VALUES (?,?,?,?,?,?,?,?,?)", history)
        conn.execute("DELETE FROM history WHERE seq = (SELECT max(seq) FROM history)")
        conn.execute("INSERT INTO profile (id, text, updated_at, edited_by_user, sources) "
                     "VALUES (1, 'Lives in Lisbon.', '2024-06-03T07:00:00Z', 1, NULL)")
        conn.execute("PRAGMA user_version = 7")
        conn.execute("COMMIT")
    finally:
        conn.close()


def _store(path: Path) -> MemoryStore:
    embedder = HashEmbedder(dimension=64)
    return MemoryStore(path, embedder=lambda: embedder, vectors=MemoryVectors,
                       clock=FakeClock(datetime(2025, 1, 1, 12, 0, tzinfo=UTC)))


def _dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        return [f"user_version {version}", *conn.iterdump()]
    finally:
        conn.close()


def _check_migrated(path: Path) -> None:
    """What the old rows must read as after step 8 (opening the store migrates if needed)."""
    store = _store(path)
    try:
        assert int(store.conn.execute("PRAGMA user_version").fetchone()[0]) == 8
        lisbon = store.get("aaaa0001")
        assert (lisbon.created_at, lisbon.updated_at, lisbon.last_used_at) == (
            _seconds("2024-05-01T12:00:00Z"), _seconds("2024-06-01T08:30:00Z"),
            _seconds("2024-06-02T09:00:00Z"))
        assert (lisbon.use_count, lisbon.version, lisbon.key) == (3, 2, "city")
        tea = store.get("aaaa0002")
        assert tea.last_used_at is None and tea.pinned
        # Shown and exported exactly as before.
        assert (lisbon.to_json()["created_at"], lisbon.to_json()["updated_at"]) == (
            "2024-05-01T12:00:00Z", "2024-06-01T08:30:00Z")
        out = io.StringIO()
        export_memories(store, out)
        exported = {row["text"]: row for row in map(json.loads, out.getvalue().splitlines())}
        assert exported["The user drinks green tea"]["created_at"] == "2024-05-02T10:00:00Z"
        assert exported["Filler memory number 61"]["created_at"] == "2023-01-01T00:01:01Z"
        # Newest change first, as the ISO text sorted; pinned first.
        assert [m.id for m in store.list()][:2] == ["aaaa0002", "aaaa0001"]
        events = store.history("aaaa0001")
        assert [(e.event, e.actor, e.at, e.via) for e in events] == [
            (Event.ADD, Actor.USER, _seconds("2024-05-01T12:00:00Z"), None),
            (Event.UPDATE, Actor.AGENT, _seconds("2024-06-01T08:30:00Z"), "claude")]
        assert store.history("aaaa0002")[-1].undone
        profile = store.profile()
        assert (profile.text, profile.updated_at, profile.edited_by_user) == (
            "Lives in Lisbon.", _seconds("2024-06-03T07:00:00Z"), True)
        kinds = store.conn.execute(
            "SELECT DISTINCT typeof(created_at), typeof(updated_at) FROM memories").fetchall()
        assert [tuple(k) for k in kinds] == [("real", "real")]
        kinds = store.conn.execute("SELECT DISTINCT typeof(at) FROM history").fetchall()
        assert [tuple(k) for k in kinds] == [("real",)]
        # Rowids and the history's seq counter kept: the deleted last seq is never reused.
        last = store.conn.execute("SELECT max(seq) FROM history").fetchone()[0]
        store.edit("aaaa0001", "The user lives in Braga")
        assert store.history("aaaa0001")[-1].seq == last + 2
        # The indexes are back and used.
        plan = " ".join(str(r[-1]) for r in store.conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE status='active' AND pinned=1"))
        assert "memories_pinned" in plan, plan
        assert [m.id for m in store.sure_keyed(0.5)] == ["aaaa0001"]
    finally:
        store.close()


def _schema(path: Path) -> list[tuple[str, ...]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master "
                                   "WHERE name NOT LIKE 'sqlite_%'").fetchall())
    finally:
        conn.close()


def test_an_old_home_reads_the_same_after_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    _old_home(path)
    _check_migrated(path)
    fresh = tmp_path / "fresh.sqlite3"
    _store(fresh).close()
    assert _schema(path) == _schema(fresh)  # tables, indexes, keyword tables: nothing lost


def test_the_step_is_idempotent_on_numeric_times(tmp_path: Path) -> None:
    """A database whose user_version was set back (as the older schema tests do) keeps its
    Unix-second times: the step converts only text."""
    path = tmp_path / "memory.sqlite3"
    _old_home(path)
    _store(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA user_version = 7")
    conn.close()
    _check_migrated(path)


# The child migrates the way `open_database` does (the store's journal mode, then the one
# runner), and SIGKILLs itself just before SQL statement number N (`statement`) or inside a
# statement, at the N-th progress tick (`tick`, every 200 VM instructions). With N = 0 it runs
# to the end and prints how many statements and ticks the migration took.
CHILD = r"""
import json, os, signal, sqlite3, sys
from assistant.errors import UserError
from assistant.memory.schema import SCHEMA
from indexing.sqlite_db import migrate

path, mode, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = sqlite3.connect(path, isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA synchronous=NORMAL")
seen = {"statement": 0, "tick": 0}

def count(kind):
    seen[kind] += 1
    if kind == mode and seen[kind] == at:
        os.kill(os.getpid(), signal.SIGKILL)
    return 0

conn.set_trace_callback(lambda sql: count("statement"))
conn.set_progress_handler(lambda: count("tick"), 200)
migrate(conn, SCHEMA, path=path, error=UserError)
conn.close()
print(json.dumps(seen))
"""


def _migrate_child(path: Path, mode: str, at: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(path), mode, str(at)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_a_migration_killed_at_any_point_leaves_old_or_new_never_half(tmp_path: Path) -> None:
    pristine = tmp_path / "old.sqlite3"
    _old_home(pristine)
    old = _dump(pristine)
    full = tmp_path / "full.sqlite3"
    full.write_bytes(pristine.read_bytes())
    done = _migrate_child(full, "none", 0)
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)
    new = _dump(full)
    assert new != old and new[0] == "user_version 8"
    # Before BEGIN, before every third statement after it and before COMMIT (the last one),
    # and at six points inside statements (a row copy, a DROP, a rename half done).
    last = counts["statement"]
    points = [("statement", n) for n in sorted({*range(1, last, 3), last})]
    points += [("tick", max(1, counts["tick"] * k // 6)) for k in range(6)]
    outcomes = []
    for mode, at in points:
        path = tmp_path / f"killed-{mode}-{at}.sqlite3"
        path.write_bytes(pristine.read_bytes())
        killed = _migrate_child(path, mode, at)
        assert killed.returncode == -signal.SIGKILL, (mode, at, killed.stderr)
        found = _dump(path)
        assert found in (old, new), f"half migrated after a kill at {mode} {at}"
        outcomes.append(found == new)
        _check_migrated(path)  # the next open finishes (or had nothing left to do)
    assert not all(outcomes), "no kill landed before the commit"


def test_an_import_hashes_as_before_the_step(tmp_path: Path) -> None:
    """The hash that recognises a repeated import still reads the time as the ISO text the
    release before step 8 hashed: a file imported then is refused (or resumed) now."""
    import hashlib

    from assistant.memory.transfer import content_hash, parse_lines

    lines = [json.dumps({"text": "Went to Porto", "type": "episode",
                         "created_at": "2024-05-01T12:00:00.700+02:00", "session": "s1"}),
             json.dumps({"text": "Likes tea"})]
    parsed = parse_lines(lines)
    assert parsed.items[0].created_at == _seconds("2024-05-01T10:00:00Z")  # whole seconds
    digest = hashlib.sha256()  # what that release computed for these lines
    for fields in (["Went to Porto", "episode", None, "2024-05-01T10:00:00Z", None, 0.5, 1.0,
                    False, "s1"], ["Likes tea", "fact", None, None, None, 0.5, 1.0, False, None]):
        digest.update(json.dumps(fields, ensure_ascii=False).encode("utf-8") + b"\n")
    assert content_hash(parsed) == digest.hexdigest()
