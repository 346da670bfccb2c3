"""The retrieval log: every query with its hits, scores and stage timings, plus feedback.

It is how users (and we) debug a bad answer: what was searched, what came back and why.
Privacy: only sources, chunk ids and scores are stored, never chunk text. 👎-rated entries
become eval cases (`brain log --disliked --export`) so the golden set grows from real failures.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.errors import UserError
from assistant.paths import FILE_MODE, ensure_private_dir
from assistant.retrieval.hit import RetrievalResult
from assistant.store_health import LOG_RECOVERY
from indexing.clock import EpochClock, wall_clock
from indexing.scrub import scrub_connection
from indexing.sqlite_db import Schema, open_database

# Steps of `indexing.sqlite_db`. Step 1 keeps IF NOT EXISTS: logs from before the log had a
# schema version (user_version 0) already have these tables.
_MIGRATIONS: tuple[str, ...] = (
    """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    origin TEXT NOT NULL,
    query TEXT NOT NULL,
    search_query TEXT NOT NULL,
    in_path TEXT,
    low_confidence INTEGER NOT NULL,
    timings TEXT NOT NULL,
    hits TEXT NOT NULL,
    rating INTEGER,
    correct_sources TEXT,
    rated_at REAL
);
CREATE INDEX IF NOT EXISTS entries_rating ON entries(rating);
""",
)
SCHEMA = Schema("retrieval log", _MIGRATIONS)


@dataclass(frozen=True, slots=True)
class LoggedHit:
    rank: int
    chunk_id: str
    source: str
    heading: str
    score: float
    cosine: float | None
    keyword: float | None
    bm25: float | None
    fused: float


@dataclass(frozen=True, slots=True)
class LogEntry:
    id: int
    time: float
    origin: str  # "cli", "tui", "chat", "eval"
    query: str
    search_query: str
    in_path: str | None
    low_confidence: bool
    timings: dict[str, float]
    hits: list[LoggedHit]
    rating: int | None  # +1, -1 or None
    correct_sources: list[str]
    rated_at: float | None


class RetrievalLog:
    """Append-only log in its own SQLite file; safe to share between threads."""

    def __init__(self, db_path: Path, *, clock: EpochClock = wall_clock) -> None:
        ensure_private_dir(db_path.parent)
        self.path = db_path
        self.clock = clock
        self._lock = threading.Lock()
        # Every search appends a row: WAL + synchronous=NORMAL make that commit an append
        # without an fsync (0.1-0.6 s of a cold `brain search` on a busy disk); a crash can
        # lose the last entries of a log, never corrupt it.
        self._conn = open_database(
            db_path, SCHEMA, error=UserError, timeout=10, autocommit=False,
            damaged_hint=LOG_RECOVERY,
            pragmas=("journal_mode=WAL", "synchronous=NORMAL"),
        )
        db_path.chmod(FILE_MODE)

    @classmethod
    def open(cls, db_path: Path, *, clock: EpochClock = wall_clock) -> RetrievalLog:
        return cls(db_path, clock=clock)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> RetrievalLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ----------------------------------------------------------------------------

    def append(
        self,
        result: RetrievalResult,
        *,
        origin: str = "cli",
        in_path: str | None = None,
        when: float | None = None,
    ) -> int:
        hits = [
            {
                "rank": h.rank,
                "chunk_id": h.chunk_id,
                "source": h.source,
                "heading": h.heading,
                "score": h.score,
                "cosine": h.cosine,
                "keyword": h.keyword,
                "bm25": h.bm25,
                "fused": h.fused,
            }
            for h in result.hits
        ]
        with self._lock, self._conn:
            cur = self._conn.execute(
                "INSERT INTO entries (time, origin, query, search_query, in_path, low_confidence,"
                " timings, hits) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.clock() if when is None else when,
                    origin,
                    result.query,
                    result.search_query or result.query,
                    in_path,
                    int(result.low_confidence),
                    json.dumps(result.timings),
                    json.dumps(hits, ensure_ascii=False),
                ),
            )
            return int(cur.lastrowid or 0)

    def rate(
        self, entry_id: int, rating: int, correct_sources: Sequence[str] | None = None
    ) -> None:
        """Record the user's 👍 (+1) or 👎 (-1), optionally with the sources that were right."""
        if rating not in (1, -1):
            raise ValueError(f"rating must be +1 or -1, got {rating!r}")
        sources = [str(s) for s in (correct_sources or [])]
        with self._lock, self._conn:
            cur = self._conn.execute(
                "UPDATE entries SET rating = ?, correct_sources = ?, rated_at = ? WHERE id = ?",
                (rating, json.dumps(sources, ensure_ascii=False), self.clock(), entry_id),
            )
        if cur.rowcount == 0:
            raise UserError(f"no retrieval log entry {entry_id}")

    def redact_sources(self, folders: Sequence[str]) -> int:
        """Forget these folders' (or files') sources in every entry: their hits, their place in
        👎 feedback and an `--in` filter naming them; the queries and timings stay. Returns the
        entries changed; `scrub()` then leaves no trace of the old rows in the file."""
        prefixes = [f.rstrip("/") for f in folders if f]
        if not prefixes:
            return 0

        def removed(path: str | None) -> bool:
            if not path:
                return False
            return any(path == p or path.startswith(p + "/") for p in prefixes)

        changed = 0
        with self._lock, self._conn:
            for row in self._conn.execute(
                "SELECT id, hits, correct_sources, in_path FROM entries").fetchall():
                entry_id, hits_json, correct_json, in_path = row
                hits = json.loads(hits_json)
                kept = [h for h in hits if not removed(h.get("source"))]
                correct = json.loads(correct_json) if correct_json else None
                kept_correct = ([c for c in correct if not removed(c)]
                                if correct is not None else None)
                if kept == hits and kept_correct == correct and not removed(in_path):
                    continue
                self._conn.execute(
                    "UPDATE entries SET hits = ?, correct_sources = ?, in_path = ? "
                    "WHERE id = ?",
                    (json.dumps(kept, ensure_ascii=False),
                     None if kept_correct is None else json.dumps(kept_correct,
                                                                  ensure_ascii=False),
                     None if removed(in_path) else in_path, entry_id),
                )
                changed += 1
        return changed

    def delete_entries(self, ids: Collection[int]) -> int:
        """Delete these entries (e.g. a deleted session's searches)."""
        with self._lock, self._conn:
            return sum(self._conn.execute("DELETE FROM entries WHERE id = ?", (int(i),)).rowcount
                       for i in ids)

    def scrub(self) -> None:
        """Leave no trace of deleted or rewritten entries in the file (indexing.scrub)."""
        with self._lock:
            level = self._conn.isolation_level
            self._conn.isolation_level = None
            try:
                scrub_connection(self._conn, label=f"retrieval log {self.path}")
            finally:
                self._conn.isolation_level = level

    # --- reading ----------------------------------------------------------------------------

    def recent(self, limit: int = 20, *, disliked: bool = False) -> list[LogEntry]:
        """Newest first."""
        where = "WHERE rating = -1" if disliked else ""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT * FROM entries {where} ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [_entry(r) for r in rows]

    def get(self, entry_id: int) -> LogEntry | None:
        with self._lock:
            row = self._conn.execute("SELECT * FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return _entry(row) if row else None

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM entries").fetchone()[0])

    def export_disliked(self, path: Path) -> int:
        """Write 👎-rated queries as eval cases `{"query", "expected"}`; returns the count.

        Written to a temporary file first so a failed export never leaves half a file.
        """
        cases = disliked_cases(self.recent(limit=1_000_000, disliked=True))
        tmp = path.with_name(path.name + ".tmp")
        try:
            with tmp.open("w", encoding="utf-8") as out:
                for case in cases:
                    out.write(json.dumps(case, ensure_ascii=False) + "\n")
            tmp.replace(path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return len(cases)


def disliked_cases(entries: Sequence[LogEntry]) -> list[dict[str, Any]]:
    """Eval cases from newest-first entries: oldest first, one per distinct query, the
    newest rating's sources winning.
    """
    by_query: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.query not in by_query:
            by_query[entry.query] = {"query": entry.query, "expected": entry.correct_sources}
    return list(reversed(by_query.values()))


def _entry(row: tuple[Any, ...]) -> LogEntry:
    (id_, when, origin, query, search_query, in_path, low, timings, hits, rating, correct,
     rated_at) = row
    return LogEntry(
        id=id_,
        time=when,
        origin=origin,
        query=query,
        search_query=search_query,
        in_path=in_path,
        low_confidence=bool(low),
        timings=json.loads(timings),
        hits=[LoggedHit(**h) for h in json.loads(hits)],
        rating=rating,
        correct_sources=json.loads(correct) if correct else [],
        rated_at=rated_at,
    )
