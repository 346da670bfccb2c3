"""The on-disk embedding cache: one diskcache directory per model id, keyed by sha256(text)
(`indexing.embedder.text_key`), so no text is embedded twice.

Opening it tells the place from the file: a full disk or a read-only home gives a run an
in-memory cache and leaves the disk cache as it was; only a verified integrity failure moves
the cache aside. `erase_cached` is the removal side (a folder's chunks, forgotten memories):
entries deleted and no trace left in the file.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import re
import sqlite3
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from indexing.embedders.base import EmbeddingModelError
from indexing.scrub import scrub_file

_CACHE_SIZE_LIMIT = 8 * 1024**3  # evicting only costs a re-embed, but let big corpora fit
log = logging.getLogger(__name__)


def safe_dir_name(model_id: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("._")[:80] or "model"
    return f"{readable}-{hashlib.sha256(model_id.encode()).hexdigest()[:8]}"


def _new_cache(directory: Path) -> Any:
    import diskcache

    # cull_limit=0: no eviction check on every write (it doubled the cost of a write); the
    # size limit is enforced once per open instead.
    cache = diskcache.Cache(str(directory), size_limit=_CACHE_SIZE_LIMIT, cull_limit=0)
    cache.cull()
    return cache


# Errors of the place, not of the cache: a full disk, a read-only mount, no permission.
_UNWRITABLE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM,
                                errno.EDQUOT})
_UNWRITABLE_SQLITE = ("readonly database", "read-only", "disk is full", "unable to open",
                      "disk i/o error", "permission", "locked")


def unwritable(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno in _UNWRITABLE_ERRNOS
    return isinstance(exc, sqlite3.OperationalError) and any(
        words in str(exc).lower() for words in _UNWRITABLE_SQLITE)


def cache_damaged(directory: Path) -> bool:
    """A verified integrity failure of the cache's database: it exists and SQLite, reading it
    read-only, finds it malformed or not a database at all. Anything else (it cannot be
    opened, the disk is full) is not damage."""
    db = directory / "cache.db"
    if not db.is_file():
        return False
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return str(conn.execute("PRAGMA quick_check").fetchone()[0]) != "ok"
    except sqlite3.OperationalError:
        return False  # locked, unreadable: the place, not the file
    except sqlite3.DatabaseError:
        return True  # "file is not a database", "database disk image is malformed"
    finally:
        conn.close()


class MemoryCache:
    """The cache's interface in memory: what a run uses when the disk cache cannot be
    written (full disk, read-only home). Nothing is lost: the disk cache is left as it was,
    and this run embeds what it does not find."""

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def set(self, key: str, value: Any) -> bool:
        self._items[key] = value
        return True

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def iterkeys(self) -> Iterator[str]:
        return iter(list(self._items))

    def delete(self, key: str) -> bool:
        return self._items.pop(key, None) is not None

    def transact(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def close(self) -> None:
        self._items.clear()


def open_cache(directory: Path) -> Any:
    try:
        return _new_cache(directory)
    except (sqlite3.DatabaseError, OSError) as first:
        if unwritable(first) or not cache_damaged(directory):
            # Reading needs no write access: a search on a read-only home or a full disk
            # goes on without persisting, and the healthy cache stays where it is.
            log.info("the embedding cache at %s cannot be written (%s); this run keeps "
                     "its embeddings in memory", directory, first)
            return MemoryCache()
        # A verified integrity failure: the cache is derived data, so the damaged one is
        # moved aside (kept for inspection) and replaced, costing re-embeds but never
        # blocking indexing.
        aside = directory.with_name(f"{directory.name}.broken-{int(time.time())}")
        try:
            directory.rename(aside)
            return _new_cache(directory)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise EmbeddingModelError(
                f"The embedding cache at {directory} is damaged and cannot be replaced: {exc}",
                hint="delete that directory; it only holds cached embeddings",
            ) from exc


# Deletes per cache transaction in `drop_keys`: other processes wait for the cache's lock
# only this long (~0.1 s) at a time.
_DROP_BATCH = 2000


def drop_keys(cache: Any, keys: Collection[str]) -> int:
    """Delete the entries of these keys that `cache` (diskcache or `MemoryCache`) holds: those
    whose vectors another store now keeps by content. The file shrinks as it goes (diskcache
    runs SQLite with auto_vacuum=FULL). Returns the entries deleted."""
    present = [key for key in cache.iterkeys() if isinstance(key, str) and key in keys]
    removed = 0
    for start in range(0, len(present), _DROP_BATCH):
        with cache.transact():
            removed += sum(bool(cache.delete(key)) for key in present[start:start + _DROP_BATCH])
    return removed


def erase_cached(cache_root: str | Path, keys: Collection[str]) -> int:
    """Delete these text keys (`text_key`) from every model's cache under `cache_root` and leave
    no trace of them in the cache files; returns the entries deleted. For removals the user
    expects to be final (a folder's chunks, forgotten memories)."""
    import diskcache

    root = Path(cache_root)
    if not keys or not root.is_dir():
        return 0
    removed = 0
    for directory in sorted(p for p in root.iterdir() if (p / "cache.db").is_file()):
        cache = diskcache.Cache(str(directory), size_limit=_CACHE_SIZE_LIMIT, cull_limit=0)
        try:
            with cache.transact():
                here = sum(bool(cache.delete(key)) for key in keys)
        finally:
            cache.close()
        if here:
            scrub_file(directory / "cache.db", label=f"embedding cache {directory}")
        removed += here
    return removed
