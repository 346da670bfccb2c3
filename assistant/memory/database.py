"""The memory database as every part of the store uses it: one connection, one lock, one
write transaction shape, and the keyword table that changes inside those transactions.

Every change is one `BEGIN IMMEDIATE` transaction (`write()`); listeners hear of it after the
commit. The keyword table lives in the same database, so a memory and its keyword row never
disagree after a crash.
"""

from __future__ import annotations

import logging
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol

from assistant.errors import UserError
from assistant.memory.clock import Clock, seconds_of
from assistant.memory.keywords import MemoryKeywords
from assistant.memory.schema import SCHEMA
from assistant.store_health import MEMORY_RECOVERY
from indexing.scrub import scrub_connection
from indexing.sqlite_db import open_database

log = logging.getLogger(__name__)

KEYWORD_TABLE = "memory_fts"
PROFILE_ID = "profile"
_ID_BYTES = 4  # 8 hex chars: short enough to type, checked for collisions


class KeywordSearch(Protocol):
    """The part of `indexing.keywords.KeywordIndex` the memory store uses."""

    def add(self, items: Iterable[tuple[str, str]]) -> object: ...
    def delete(self, ids: Iterable[str]) -> object: ...
    def search(self, query: str, k: int, *, ids: Any = None) -> list[tuple[str, float]]: ...
    def count(self) -> int: ...
    def optimize(self) -> None: ...


KeywordFactory = Callable[[sqlite3.Connection, str], KeywordSearch]


class MemoryDatabase:
    """The connection and its lock: thread-safe within a process; WAL across processes."""

    def __init__(self, db_path: Path, *, clock: Clock,
                 keywords: KeywordFactory | None = None) -> None:
        self.db_path = Path(db_path)
        self.clock = clock
        self.lock = threading.RLock()
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
            keywords = MemoryKeywords
        self._keywords_factory = keywords
        self.keywords = keywords(self.conn, KEYWORD_TABLE)

    def reopen_keywords(self, conn: sqlite3.Connection) -> None:
        """A fresh keyword table after forget-all dropped the old one (inside its write)."""
        self.keywords = self._keywords_factory(conn, KEYWORD_TABLE)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
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

    def via(self) -> str | None:
        """Who this thread acts for (`on_behalf_of`), if anyone."""
        via: str | None = getattr(self._agent, "via", None)
        return via

    def change_count(self) -> int:
        """Grows whenever the memories change, also by another process (poll it to refresh)."""
        with self.lock:
            data_version = int(self.conn.execute("PRAGMA data_version").fetchone()[0])
        return self._local_changes + data_version

    def now(self) -> float:
        """Unix seconds, the form every time column of memory.sqlite3 holds."""
        return seconds_of(self.clock())

    def new_id(self, conn: sqlite3.Connection) -> str:
        while True:
            candidate = secrets.token_hex(_ID_BYTES)
            if candidate == PROFILE_ID[:8]:
                continue
            if conn.execute("SELECT 1 FROM memories WHERE id=?", (candidate,)).fetchone() is None:
                return candidate

    def scrub(self) -> None:
        """Leave no deleted text in the file: FTS segments merged, free pages overwritten."""
        self.keywords.optimize()
        scrub_connection(self.conn, label=f"memory database {self.db_path}")

    def close(self) -> None:
        with self.lock:
            with suppress(sqlite3.Error):
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.close()
