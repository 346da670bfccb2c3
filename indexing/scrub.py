"""Leave no trace of deleted rows in a SQLite file: one way for every store.

Deleting a row only unlinks it: its bytes stay in the page's free space, in free pages and in
the WAL until they happen to be overwritten. After a removal the user expects to be final
(`brain folders rm`, forgetting memories, deleting a session), each store that held the data
is scrubbed: VACUUM rewrites the file from its live rows only, and a TRUNCATE checkpoint
copies the WAL into it and empties the WAL file. Readers in other processes can delay the
checkpoint; it is retried until `timeout`, then reported rather than silently skipped.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from indexing.errors import HintedError


class ScrubIncomplete(HintedError):
    """Another process kept old pages alive; the removal stands but a trace may remain."""


def checkpoint_truncate(conn: sqlite3.Connection, *, timeout: float = 10.0) -> bool:
    """Copy the WAL into the database and empty it; False if readers kept it busy."""
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row is None or int(row[0]) == 0:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def scrub_connection(conn: sqlite3.Connection, *, label: str, timeout: float = 10.0) -> None:
    """VACUUM and empty the WAL of `conn`'s database (outside any transaction)."""
    conn.execute("VACUUM")
    if not checkpoint_truncate(conn, timeout=timeout):
        raise ScrubIncomplete(
            f"the {label} was cleaned, but another second-brain process kept its old pages "
            "open, so a trace of the removed data may remain in its journal",
            hint="close the other second-brain windows, then repeat the removal (it is safe "
            "to run again)",
        )


def scrub_file(path: Path, *, label: str, timeout: float = 10.0) -> None:
    """`scrub_connection` on a database this process does not hold open."""
    if not path.exists():
        return
    conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    try:
        scrub_connection(conn, label=label, timeout=timeout)
    finally:
        conn.close()
