"""EventStore: the agent event log in its own SQLite file (paths.events_db).

SQLite is the whole store: rows, keywords (the shared `KeywordIndex`, kept in step with the rows
by a delete trigger) and vectors (float32 blobs). Vectors live in the row rather than in Chroma
because events are many, small and written fast by agents: a write is one short transaction
with no vector work (an event is embedded later, by `embed_pending`, so `log_event` never waits
for the model), a removal is one transaction plus a scrub of this one file, and a search loads
the vectors into memory once per process and then only what is new (`matrix.py`).

Processes share the file safely: WAL, every write its own short `BEGIN IMMEDIATE`, no lock held
between calls. A process killed mid-write leaves the previous state (one transaction); an event
whose vector was never written is simply still pending.
"""

from __future__ import annotations

import builtins
import logging
import secrets
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import numpy as np

from assistant.errors import UserError
from assistant.events.model import (
    MAX_LABEL_CHARS,
    MAX_TEXT_CHARS,
    Event,
    EventError,
    EventType,
    NewEvent,
)
from assistant.memory.secrets import find_secret
from assistant.store_health import EVENTS_RECOVERY
from indexing.clock import EpochClock, wall_clock
from indexing.keywords import KeywordIndex
from indexing.sqlite_db import Schema, open_database

log = logging.getLogger(__name__)

KEYWORD_TABLE = "event_fts"
BUSY_TIMEOUT_MS = 10_000  # how long a write waits for another process's
ID_PREFIX = "ev"

SCHEMA = Schema("event log", (
    # v1
    """
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        ts REAL NOT NULL,
        type TEXT NOT NULL,
        text TEXT NOT NULL,
        importance REAL NOT NULL,
        agent TEXT NOT NULL,
        session TEXT,
        parent TEXT,
        vector BLOB,
        model TEXT,
        vec_seq INTEGER
    );
    CREATE INDEX events_ts ON events(ts);
    CREATE INDEX events_session ON events(session, seq);
    CREATE INDEX events_pending ON events(seq) WHERE vector IS NULL;
    CREATE INDEX events_vec_seq ON events(vec_seq) WHERE vec_seq IS NOT NULL;
    CREATE TABLE summary_links (
        summary_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
        event_id TEXT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
        PRIMARY KEY (summary_id, event_id)
    );
    CREATE INDEX summary_links_event ON summary_links(event_id);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta(key, value) VALUES ('generation', '0'), ('vec_seq', '0')
    """,
))

_COLUMNS = "id, ts, type, text, importance, agent, session, parent, vector IS NOT NULL"


def _row_event(row: Sequence[Any], covers: tuple[str, ...] = ()) -> Event:
    return Event(
        id=str(row[0]), ts=float(row[1]), type=EventType(str(row[2])), text=str(row[3]),
        importance=float(row[4]), agent=str(row[5]),
        session=None if row[6] is None else str(row[6]),
        parent=None if row[7] is None else str(row[7]), embedded=bool(row[8]),
        summary_of=covers,
    )


def check_new(new: NewEvent, now: float) -> NewEvent:
    """Every writer's bounds; raises EventError with the one-line reason."""
    text = new.text.strip()
    if not text:
        raise EventError("an event needs some text")
    if len(text) > MAX_TEXT_CHARS:
        raise EventError(f"event text is {len(text):,} characters, more than the "
                         f"{MAX_TEXT_CHARS:,} allowed: log a shorter summary")
    if not 0.0 <= new.importance <= 1.0:
        raise EventError(f"importance must be between 0 and 1, got {new.importance}")
    for name, value in (("session", new.session), ("agent", new.agent)):
        if value is not None and len(value) > MAX_LABEL_CHARS:
            raise EventError(f"{name} is longer than {MAX_LABEL_CHARS} characters")
    if new.ts is not None and not 0 <= new.ts <= now + 86_400:
        raise EventError("ts must be a time no later than tomorrow")
    # The same rule as memories: an agent's log must not become a copy of a credential.
    finding = find_secret(text)
    if finding:
        raise EventError(f"not logged: {finding.message()}")
    return NewEvent(type=new.type, text=text, importance=float(new.importance),
                    agent=new.agent or "unknown", session=new.session or None,
                    parent=new.parent or None, ts=new.ts, covers=new.covers)


class EventStore:
    """All reads and writes of events. Thread-safe within a process; WAL across processes."""

    def __init__(self, db_path: Path, *, clock: EpochClock = wall_clock) -> None:
        self.db_path = Path(db_path)
        self.clock = clock
        self._lock = threading.RLock()
        self._local_changes = 0
        self.conn = open_database(
            self.db_path, SCHEMA, error=UserError, damaged_hint=EVENTS_RECOVERY,
            pragmas=("journal_mode=WAL", "synchronous=NORMAL", "secure_delete=ON",
                     "foreign_keys=ON", f"busy_timeout={BUSY_TIMEOUT_MS}"),
        )
        self.keywords = KeywordIndex(self.conn, KEYWORD_TABLE, autocommit=False)
        # Whoever deletes a row (this store, an older release, a cascade), its words go with it.
        self.keywords.follow_deletes("events")

    @property
    def lock(self) -> threading.RLock:
        """Held by every statement of this store's connection (erase.py scrubs under it)."""
        return self._lock

    @classmethod
    def open(cls, db_path: Path) -> EventStore:
        return cls(db_path)

    def close(self) -> None:
        with self._lock:
            with suppress(sqlite3.Error):
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            self.conn.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
                raise
            self._local_changes += 1

    def change_count(self) -> int:
        """Grows whenever the log changes, also by another process (poll it to refresh)."""
        with self._lock:
            data_version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        return self._local_changes + data_version

    def generation(self) -> int:
        """Bumped by every removal: a reader's cached vectors are stale when it changes."""
        with self._lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0])

    # --- writes -----------------------------------------------------------------------------

    def log(self, new: NewEvent) -> Event:
        return self.log_many([new])[0]

    def try_log(self, new: NewEvent, *, wait_ms: int) -> Event | None:
        """`log`, unless this store is busy in another thread or another process holds the
        file's write lock for more than `wait_ms`: then None and nothing is written. For a
        caller that must not block (the MCP server's event loop, server.py)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self.conn.execute(f"PRAGMA busy_timeout={int(wait_ms)}")
            try:
                return self.log(new)
            except sqlite3.OperationalError as exc:  # rolled back by _write: nothing written
                if "locked" in str(exc) or "busy" in str(exc):
                    return None
                raise
            finally:
                self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        finally:
            self._lock.release()

    def log_many(self, items: Sequence[NewEvent]) -> builtins.list[Event]:
        """Store events in one transaction (all or none); ids are assigned here."""
        now = self.clock()
        checked = [check_new(item, now) for item in items]
        stored: list[Event] = []
        with self._write() as conn:
            for new in checked:
                for linked in filter(None, (new.parent, *new.covers)):
                    if conn.execute("SELECT 1 FROM events WHERE id=?", (linked,)).fetchone() \
                            is None and linked not in {e.id for e in stored}:
                        raise EventError(f"no event with id {linked!r}")
                event_id = f"{ID_PREFIX}{secrets.token_hex(6)}"
                ts = new.ts if new.ts is not None else now
                conn.execute(
                    "INSERT INTO events(id, ts, type, text, importance, agent, session, parent) "
                    "VALUES (?,?,?,?,?,?,?,?)",
                    (event_id, ts, new.type.value, new.text, new.importance, new.agent,
                     new.session, new.parent))
                conn.executemany("INSERT INTO summary_links(summary_id, event_id) VALUES (?,?)",
                                 [(event_id, covered) for covered in new.covers])
                stored.append(Event(event_id, new.type, new.text, new.importance, new.agent,
                                    new.session, new.parent, ts, False,
                                    tuple(sorted(new.covers))))
            self.keywords.add((e.id, e.text) for e in stored)
        return stored

    def summaries_of(self, ids: Sequence[str]) -> builtins.list[str]:
        """The summaries written from these events, and from those summaries, and so on."""
        found: set[str] = set()
        frontier = builtins.list(ids)
        with self._lock:
            while frontier:
                above = {str(r[0]) for r in self.conn.execute(
                    "SELECT summary_id FROM summary_links WHERE event_id IN "
                    "(SELECT value FROM json_each(?))", (_json(frontier),))}
                frontier = builtins.list(above - found - set(ids))
                found |= above
        return sorted(found)

    def delete(self, ids: Sequence[str]) -> builtins.list[str]:
        """Remove events by id, with the summaries written from them (their text came from
        the removed events); returns every id removed. Unknown ids raise before anything is
        removed. The caller scrubs the file (erase.py): deleting only unlinks the rows."""
        with self._write() as conn:
            wanted = [self._resolve(conn, i) for i in ids]
            gone = set(wanted)
            frontier = builtins.list(gone)
            while frontier:  # summaries of summaries go too
                marks = ",".join("?" * len(frontier))
                above = {r[0] for r in conn.execute(
                    f"SELECT summary_id FROM summary_links WHERE event_id IN ({marks})",
                    frontier)}
                frontier = builtins.list(above - gone)
                gone |= above
            order = sorted(gone)
            conn.executemany("DELETE FROM events WHERE id=?", [(i,) for i in order])
            conn.execute("UPDATE events SET parent=NULL WHERE parent IN "
                         "(SELECT value FROM json_each(?))", (_json(order),))
            self._bump_generation(conn)
        return order

    def forget_all(self) -> int:
        with self._write() as conn:
            count = int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
            conn.execute("DELETE FROM summary_links")
            conn.execute("DELETE FROM events")
            self.keywords.clear()
            self._bump_generation(conn)
        return count

    def _bump_generation(self, conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")

    # --- vectors ----------------------------------------------------------------------------

    def pending(self, limit: int, *, model_id: str, newest_first: bool = False,
                stale: bool = True) -> builtins.list[tuple[str, str]]:
        """(id, text) of events without a vector (oldest first unless `newest_first`), then,
        once every event has one and if `stale`, of those whose vector is from another model
        than `model_id` (that look-up reads every row: not for a search's hot path)."""
        order = "DESC" if newest_first else "ASC"
        with self._lock:
            rows = self.conn.execute(
                f"SELECT id, text FROM events WHERE vector IS NULL ORDER BY seq {order} LIMIT ?",
                (limit,)).fetchall()
            if not rows and stale:
                rows = self.conn.execute(
                    "SELECT id, text FROM events WHERE model IS NOT ? AND vector IS NOT NULL "
                    "ORDER BY seq LIMIT ?", (model_id, limit)).fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def store_vectors(self, model_id: str, vectors: dict[str, np.ndarray]) -> int:
        """Write vectors of events still present (one removed meanwhile is skipped)."""
        with self._write() as conn:
            seq = int(conn.execute("SELECT value FROM meta WHERE key='vec_seq'").fetchone()[0])
            written = 0
            for event_id, vector in vectors.items():
                seq += 1
                cur = conn.execute(
                    "UPDATE events SET vector=?, model=?, vec_seq=? WHERE id=?",
                    (np.asarray(vector, dtype=np.float32).tobytes(), model_id, seq, event_id))
                written += cur.rowcount
            conn.execute("UPDATE meta SET value=? WHERE key='vec_seq'", (str(seq),))
        return written

    def vectors_since(
        self, vec_seq: int, *, model_id: str
    ) -> builtins.list[tuple[int, str, bytes, float, str, float, str | None]]:
        """(vec_seq, id, vector bytes, ts, type, importance, session) written after `vec_seq`."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT vec_seq, id, vector, ts, type, importance, session FROM events "
                "WHERE vec_seq > ? AND model = ? ORDER BY vec_seq", (vec_seq, model_id),
            ).fetchall()
        return [(int(r[0]), str(r[1]), bytes(r[2]), float(r[3]), str(r[4]), float(r[5]),
                 None if r[6] is None else str(r[6])) for r in rows]

    # --- reads ------------------------------------------------------------------------------

    def _resolve(self, conn: sqlite3.Connection, prefix: str) -> str:
        text = prefix.strip()
        if not text:
            raise EventError("an event id is needed")
        rows = conn.execute("SELECT id FROM events WHERE id >= ? AND id < ? LIMIT 2",
                            (text, text + "\U0010ffff")).fetchall()
        if not rows:
            raise EventError(f"no event with id {text!r} (see `brain events list`)")
        if len(rows) > 1 and rows[0][0] != text:
            raise EventError(f"event id {text!r} is ambiguous: give more of it")
        return str(rows[0][0])

    def get(self, id_or_prefix: str) -> Event:
        with self._lock:
            event_id = self._resolve(self.conn, id_or_prefix)
        return self.get_many([event_id])[event_id]

    def get_many(self, ids: Sequence[str]) -> dict[str, Event]:
        if not ids:
            return {}
        with self._lock:
            rows = self.conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE id IN (SELECT value FROM json_each(?))",
                (_json(ids),)).fetchall()
            covers: dict[str, list[str]] = {}
            for summary_id, event_id in self.conn.execute(
                "SELECT summary_id, event_id FROM summary_links WHERE summary_id IN "
                "(SELECT value FROM json_each(?)) ORDER BY event_id", (_json(ids),)):
                covers.setdefault(str(summary_id), []).append(str(event_id))
        return {str(r[0]): _row_event(r, tuple(covers.get(str(r[0]), ()))) for r in rows}

    def list(
        self,
        *,
        types: Sequence[EventType] = (),
        since: float | None = None,
        until: float | None = None,
        session: str | None = None,
        min_importance: float = 0.0,
        limit: int = 50,
        newest_first: bool = True,
    ) -> builtins.list[Event]:
        where, params = filter_sql(types=types, since=since, until=until, session=session,
                                   min_importance=min_importance)
        order = "DESC" if newest_first else "ASC"
        with self._lock:
            rows = self.conn.execute(
                f"SELECT id FROM events WHERE {where} ORDER BY ts {order}, seq {order} LIMIT ?",
                (*params, limit)).fetchall()
        found = self.get_many([str(r[0]) for r in rows])
        return [found[str(r[0])] for r in rows if str(r[0]) in found]

    def count(self) -> int:
        with self._lock:
            return int(self.conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def keyword_search(self, query: str, k: int, *, ids: Collection[str] | None = None
                       ) -> builtins.list[tuple[str, float]]:
        """BM25 hits, best first; `ids`: only among those events."""
        with self._lock:
            return self.keywords.search(query, k, ids=ids)

    def word_shares(self, query: str) -> builtins.list[float]:
        """For each of the query's words found in the log, the share of events holding it."""
        with self._lock:
            found = self.keywords.document_frequencies(query)
            total = self.keywords.count() if found else 0
        return [n / total for n in found.values()] if total else []

    def sessions_to_summarize(
        self, *, every: int, idle_before: float | None
    ) -> builtins.list[tuple[str, builtins.list[str]]]:
        """(session, ids of its events no summary covers yet, oldest first) for each session
        with `every` such events (0 = never by count), or whose last event is older than
        `idle_before` (None = never by time)."""
        with self._lock:
            rows = self.conn.execute(
                "SELECT session, id, ts FROM events e WHERE session IS NOT NULL AND type != ? "
                "AND NOT EXISTS (SELECT 1 FROM summary_links l WHERE l.event_id = e.id) "
                "ORDER BY session, seq", (EventType.SUMMARY.value,)).fetchall()
        runs: dict[str, list[tuple[str, float]]] = {}
        for session, event_id, ts in rows:
            runs.setdefault(str(session), []).append((str(event_id), float(ts)))
        due = []
        for session, events in runs.items():
            by_count = every > 0 and len(events) >= every
            by_idle = idle_before is not None and events[-1][1] < idle_before
            if by_count or by_idle:
                due.append((session, [e[0] for e in events]))
        return due


def filter_sql(
    *,
    types: Sequence[EventType],
    since: float | None,
    until: float | None,
    session: str | None,
    min_importance: float,
) -> tuple[str, tuple[object, ...]]:
    """The WHERE clause of the event filters (half-open time range)."""
    where = ["importance >= ?"]
    params: list[object] = [min_importance]
    if types:
        where.append("type IN (SELECT value FROM json_each(?))")
        params.append(_json([t.value for t in types]))
    if since is not None:
        where.append("ts >= ?")
        params.append(since)
    if until is not None:
        where.append("ts < ?")
        params.append(until)
    if session is not None:
        where.append("session = ?")
        params.append(session)
    return " AND ".join(where), tuple(params)


def _json(values: Sequence[str]) -> str:
    import json

    return json.dumps(builtins.list(values))
