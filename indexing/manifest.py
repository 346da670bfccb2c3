"""The knowledge manifest: what is indexed, as one SQLite database (WAL).

Folders, files (stat + content hash + chunk ids + embedding model), and the chunks themselves
(text included: retrieval reads chunk text from here, not from Chroma). The keyword (FTS5) table
lives in the same database, so one transaction updates a file's manifest rows and its keyword
rows together: after a crash both are either the old or the new state, never half of each.

Schema changes go through the numbered steps of `indexing.sqlite_db` (`PRAGMA user_version`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexing.clock import EpochClock, wall_clock
from indexing.errors import HintedError
from indexing.keywords import KeywordIndex
from indexing.scrub import scrub_connection
from indexing.sqlite_db import Schema, open_database, schema_version
from indexing.types import Chunk, ChunkPlace

KEYWORD_TABLE = "chunk_fts"

# Steps of `indexing.sqlite_db`; never edit a released one.
MIGRATIONS: tuple[str, ...] = (
    # 1: folders, files, chunks (the keyword table is created by KeywordIndex itself)
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE folders (
        path TEXT PRIMARY KEY,
        added_at REAL NOT NULL,
        last_sync REAL
    );
    CREATE TABLE files (
        path TEXT PRIMARY KEY,
        folder TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime REAL NOT NULL,
        content_hash TEXT NOT NULL,
        chunk_ids TEXT NOT NULL,
        model_id TEXT NOT NULL,
        indexed_at REAL NOT NULL
    );
    CREATE INDEX files_by_folder ON files(folder);
    CREATE TABLE chunks (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        root TEXT NOT NULL,
        heading TEXT NOT NULL,
        idx INTEGER NOT NULL,
        start_char INTEGER NOT NULL,
        end_char INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        page INTEGER,
        mtime REAL NOT NULL,
        content_hash TEXT NOT NULL,
        language TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX chunks_by_source ON chunks(source, idx);
    """,
    # 2: the page a PDF chunk ends on (NULL: the page it starts on, as before).
    """
    ALTER TABLE chunks ADD COLUMN end_page INTEGER;
    """,
    # 3: the dense snapshot now holds the vectors by content and the embedding cache gives up
    # its copy of them (knowledge_snapshot.py): the next sync rewrites a snapshot from before
    # content hashes and trims the cache, then clears this record.
    """
    INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_cache_trim', 'due');
    """,
)


def _adopt_legacy(conn: sqlite3.Connection) -> int:
    """Manifests from before `user_version`: their version is in a `schema_migrations` table,
    dropped once the version moves into `user_version`."""
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone():
        return 0
    version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    conn.execute("DROP TABLE schema_migrations")
    return int(version or 0)


SCHEMA = Schema("knowledge database", MIGRATIONS, adopt=_adopt_legacy)
SCHEMA_VERSION = SCHEMA.version

SNAPSHOT_META = "dense_snapshot"  # = dense_snapshot.META_KEY (no numpy import here)
# A trim of the embedding cache is due (knowledge_snapshot.py; schema step 3 sets it too).
CACHE_TRIM_META = "embedding_cache_trim"

_CHUNK_COLUMNS = (
    "id, text, source, root, heading, idx, start_char, end_char, start_line, end_line, page, "
    "mtime, content_hash, language, end_page"
)


class ManifestError(HintedError):
    """The manifest database cannot be used (corrupt, from a newer version, unwritable)."""


@dataclass(frozen=True, slots=True)
class FolderRecord:
    path: str
    added_at: float
    last_sync: float | None


@dataclass(frozen=True, slots=True)
class FileRecord:
    path: str
    folder: str
    size: int
    mtime: float
    content_hash: str
    chunk_ids: tuple[str, ...]
    model_id: str
    indexed_at: float


def _chunk_row(chunk: Chunk) -> tuple[object, ...]:
    return (
        chunk.id, chunk.text, chunk.source, chunk.root, chunk.heading, chunk.index,
        chunk.start_char, chunk.end_char, chunk.start_line, chunk.end_line, chunk.page,
        chunk.mtime, chunk.content_hash, chunk.language, chunk.end_page,
    )


def _row_chunk(row: Sequence[Any]) -> Chunk:  # SQLite values: columns in Chunk field order
    return Chunk(*row)


def _file_record(row: Sequence[Any]) -> FileRecord:
    path, folder, size, mtime, content_hash, chunk_ids, model_id, indexed_at = row
    return FileRecord(
        str(path), str(folder), int(size), float(mtime), str(content_hash),
        tuple(json.loads(str(chunk_ids))), str(model_id), float(indexed_at),
    )


def _chunks(seq: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    # SQLite limits bound parameters per statement; stay well below it.
    for start in range(0, len(seq), size):
        yield seq[start : start + size]


class Manifest:
    """One connection to the knowledge database, shared by threads under a lock.

    Writes happen inside `transaction()`; reads may happen at any time (WAL lets other processes
    read while a sync writes).
    """

    def __init__(self, conn: sqlite3.Connection, path: Path, *,
                 clock: EpochClock = wall_clock) -> None:
        self.conn = conn
        self.path = path
        self.clock = clock  # folders' added_at, files' indexed_at, folders' last sync
        self.lock = threading.RLock()
        self._keywords: KeywordIndex | None = None
        self._depth = 0  # transactions open on this connection (see `transaction`)

    @classmethod
    def open(cls, path: Path, *, clock: EpochClock = wall_clock) -> Manifest:
        # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE … COMMIT) so nothing
        # commits half a file behind our back.
        conn = open_database(
            path, SCHEMA, error=ManifestError,
            pragmas=("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=30000"),
            # (assistant/store_health.py says the same for the CLI's diagnosis)
            damaged_hint="move it aside, then `brain index PATH…` with your folders rebuilds it "
            "from the files (embeddings come back from the cache; only the list of folders was "
            "kept in it)",
        )
        manifest = cls(conn, path, clock=clock)
        try:
            _ = manifest.keywords  # its table has its own schema (KeywordIndex)
        except BaseException:
            conn.close()
            raise
        with suppress(OSError):
            path.chmod(0o600)
        return manifest

    def schema_version(self) -> int:
        return schema_version(self.conn)

    @property
    def keywords(self) -> KeywordIndex:
        if self._keywords is None:
            with self.lock:
                self._keywords = KeywordIndex(self.conn, KEYWORD_TABLE)
        return self._keywords

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: committed on success, rolled back on any exception. Nested in
        another (a rebuild holds one around all its batches), it is a savepoint of the outer
        one: nothing commits until the outer transaction does."""
        with self.lock:
            if self._depth:
                name = f"nested{self._depth}"
                self.conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute(f"ROLLBACK TO {name}")
                    self.conn.execute(f"RELEASE {name}")
                    raise
                finally:
                    self._depth -= 1
                self.conn.execute(f"RELEASE {name}")
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self.conn.execute("COMMIT")

    def purge(self) -> None:
        """Leave no trace of deleted text on disk: merge the keyword index's segments (deleted
        entries linger in old ones until a merge), rewrite the file without its free pages,
        and empty the WAL. For removals the user expects to be final (`brain folders rm`)."""
        with self.lock:
            self.keywords.optimize()
            scrub_connection(self.conn, label=f"knowledge database {self.path}")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    # --- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str | None) -> None:
        """Set (or with None delete) a meta key; call inside a transaction or on its own."""
        with self.lock:
            if value is None:
                self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    # --- folders ----------------------------------------------------------------------------

    def folders(self) -> list[FolderRecord]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT path, added_at, last_sync FROM folders ORDER BY path"
            ).fetchall()
        return [FolderRecord(str(p), float(a), None if s is None else float(s)) for p, a, s in rows]

    def add_folder(self, path: str, added_at: float) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO folders(path, added_at, last_sync) VALUES (?, ?, NULL)",
            (path, added_at),
        )

    def delete_folder(self, path: str) -> None:
        self.conn.execute("DELETE FROM folders WHERE path = ?", (path,))

    def set_last_sync(self, path: str, when: float) -> None:
        self.conn.execute("UPDATE folders SET last_sync = ? WHERE path = ?", (when, path))

    def move_files(self, old_folder: str, new_folder: str) -> None:
        """Re-home a nested folder's files under the folder that now contains it."""
        self.conn.execute("UPDATE files SET folder = ? WHERE folder = ?", (new_folder, old_folder))
        self.conn.execute("UPDATE chunks SET root = ? WHERE root = ?", (new_folder, old_folder))

    # --- files ------------------------------------------------------------------------------

    def files(self, folder: str | None = None) -> dict[str, FileRecord]:
        sql = (
            "SELECT path, folder, size, mtime, content_hash, chunk_ids, model_id, indexed_at "
            "FROM files"
        )
        with self.lock:
            if folder is None:
                rows = self.conn.execute(sql).fetchall()
            else:
                rows = self.conn.execute(sql + " WHERE folder = ?", (folder,)).fetchall()
        return {str(r[0]): _file_record(r) for r in rows}

    def put_file(self, record: FileRecord) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files(path, folder, size, mtime, content_hash, chunk_ids, "
            "model_id, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.path, record.folder, record.size, record.mtime, record.content_hash,
                json.dumps(list(record.chunk_ids)), record.model_id, record.indexed_at,
            ),
        )

    def delete_file(self, path: str) -> None:
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def set_model_for_all_files(self, model_id: str) -> None:
        self.conn.execute("UPDATE files SET model_id = ?", (model_id,))

    def file_counts(self) -> dict[str, int]:
        with self.lock:
            rows = self.conn.execute("SELECT folder, COUNT(*) FROM files GROUP BY folder")
            return {str(f): int(n) for f, n in rows}

    def source_paths(self) -> list[str]:
        with self.lock:
            return [str(r[0]) for r in self.conn.execute("SELECT path FROM files ORDER BY path")]

    def paths_modified(self, since: float | None, until: float | None) -> list[str]:
        """Indexed files whose modification time (as of their last sync) is in [since, until)."""
        with self.lock:
            return [str(r[0]) for r in self.conn.execute(
                "SELECT path FROM files WHERE (? IS NULL OR mtime >= ?) "
                "AND (? IS NULL OR mtime < ?) ORDER BY path", (since, since, until, until))]

    # --- chunks -----------------------------------------------------------------------------

    def _chunks_changed(self) -> None:
        # The file copy of the dense vectors (dense_snapshot.py) no longer matches: forget its
        # token in the same transaction, so no search can trust it from now on.
        self.conn.execute("DELETE FROM meta WHERE key = ?", (SNAPSHOT_META,))

    def put_chunks(self, chunks: Iterable[Chunk]) -> None:
        self._chunks_changed()
        self.conn.executemany(
            f"INSERT OR REPLACE INTO chunks({_CHUNK_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [_chunk_row(c) for c in chunks],
        )

    def delete_chunks(self, ids: Collection[str]) -> None:
        ids = list(ids)
        if ids:
            self._chunks_changed()
        for part in _chunks(ids):
            marks = ",".join("?" * len(part))
            self.conn.execute(f"DELETE FROM chunks WHERE id IN ({marks})", tuple(part))

    def content_time(self, source: str) -> float | None:
        """The content time indexed for a file (its chunks' mtime, see content_time.py); None
        when it has no chunks."""
        with self.lock:
            row = self.conn.execute("SELECT mtime FROM chunks WHERE source = ? LIMIT 1",
                                    (source,)).fetchone()
        return None if row is None else float(row[0])

    def get_chunks(self, ids: Iterable[str]) -> dict[str, Chunk]:
        wanted = list(dict.fromkeys(ids))
        found: dict[str, Chunk] = {}
        with self.lock:
            for part in _chunks(wanted):
                marks = ",".join("?" * len(part))
                rows = self.conn.execute(
                    f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", tuple(part)
                ).fetchall()
                for row in rows:
                    found[str(row[0])] = _row_chunk(row)
        return {i: found[i] for i in wanted if i in found}

    def chunk_places(self, ids: Iterable[str]) -> dict[str, ChunkPlace]:
        """Source and mtime of these chunks (unknown ids are left out), without reading their
        text: a search ranks a few hundred candidates and shows ten."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, ChunkPlace] = {}
        with self.lock:
            for part in _chunks(wanted):
                marks = ",".join("?" * len(part))
                for cid, source, mtime in self.conn.execute(
                    f"SELECT id, source, mtime FROM chunks WHERE id IN ({marks})", tuple(part)
                ):
                    found[str(cid)] = ChunkPlace(str(source), float(mtime))
        return found

    def content_hashes(self, ids: Sequence[str]) -> set[str]:
        """The content hashes (= embedding cache keys) of these chunks."""
        found: set[str] = set()
        with self.lock:
            for part in _chunks(list(ids)):
                marks = ",".join("?" * len(part))
                found.update(str(r[0]) for r in self.conn.execute(
                    f"SELECT DISTINCT content_hash FROM chunks WHERE id IN ({marks})", part))
        return found

    def hashes_in_use(self, hashes: Collection[str]) -> set[str]:
        """Which of these content hashes some chunk still has."""
        used: set[str] = set()
        with self.lock:
            for part in _chunks(sorted(hashes)):
                marks = ",".join("?" * len(part))
                used.update(str(r[0]) for r in self.conn.execute(
                    f"SELECT DISTINCT content_hash FROM chunks WHERE content_hash IN ({marks})",
                    part))
        return used

    def chunk_ids(self) -> set[str]:
        with self.lock:
            return {str(r[0]) for r in self.conn.execute("SELECT id FROM chunks")}

    def chunk_hashes(self) -> dict[str, str]:
        """Every chunk id with its content hash (the dense snapshot keeps both)."""
        with self.lock:
            return {str(i): str(h) for i, h in self.conn.execute(
                "SELECT id, content_hash FROM chunks")}

    def chunk_ids_for_sources(self, sources: Iterable[str]) -> list[str]:
        wanted = list(dict.fromkeys(sources))
        out: list[str] = []
        with self.lock:
            for part in _chunks(wanted):
                marks = ",".join("?" * len(part))
                out.extend(
                    str(r[0])
                    for r in self.conn.execute(
                        f"SELECT id FROM chunks WHERE source IN ({marks})", tuple(part)
                    )
                )
        return out

    def iter_chunk_texts(self) -> Iterator[tuple[str, str]]:
        """(id, text) of every chunk, streamed (for rebuilding the keyword index)."""
        with self.lock:
            rows = self.conn.execute("SELECT id, text FROM chunks ORDER BY id")
            for cid, text in rows:
                yield str(cid), str(text)

    def chunk_counts(self) -> dict[str, int]:
        """Chunks per registered folder (chunk.root)."""
        with self.lock:
            rows = self.conn.execute("SELECT root, COUNT(*) FROM chunks GROUP BY root")
            return {str(r): int(n) for r, n in rows}

    def chunk_texts(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """id → (text, source) for re-embedding and re-upserting."""
        out: dict[str, tuple[str, str]] = {}
        with self.lock:
            for part in _chunks(list(ids)):
                marks = ",".join("?" * len(part))
                for cid, text, source in self.conn.execute(
                    f"SELECT id, text, source FROM chunks WHERE id IN ({marks})", tuple(part)
                ):
                    out[str(cid)] = (str(text), str(source))
        return out

    def chunk_lengths(self, ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        with self.lock:
            for part in _chunks(list(ids)):
                marks = ",".join("?" * len(part))
                for cid, n in self.conn.execute(
                    f"SELECT id, length(text) FROM chunks WHERE id IN ({marks})", tuple(part)
                ):
                    out[str(cid)] = int(n)
        return out

    def totals(self) -> tuple[int, int]:
        with self.lock:
            files = int(self.conn.execute("SELECT COUNT(*) FROM files").fetchone()[0])
            chunks = int(self.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        return files, chunks

    def clear_index(self) -> None:
        """Forget every file and chunk (keeps folders); inside a transaction."""
        self._chunks_changed()
        self.conn.execute("DELETE FROM files")
        self.conn.execute("DELETE FROM chunks")
        self.keywords.clear()
