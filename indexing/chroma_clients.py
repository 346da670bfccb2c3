"""Chroma clients: one per location (a directory, or a server URL) per process, made without
the environment's proxies, retired when another process changed an embedded store, closed by
`close_all`; and `guard`, which turns any Chroma failure into a `VectorStoreError`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from indexing.errors import log_failure
from indexing.filesystem import can_write, full_or_read_only
from indexing.memory_hygiene import wipe_freed_memory
from indexing.quiet_panics import rust_panics_silenced
from indexing.threads import start_daemon
from indexing.vector_errors import (
    DAMAGE_WORDS,
    NOT_DAMAGE_HINT,
    VectorStoreError,
    VectorStoreReadOnly,
    check_store_file,
    damaged,
    first_line,
    is_panic,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


_clients: dict[tuple[str, ...], Any] = {}
_clients_lock = threading.Lock()
# An embedded client reads its HNSW index into memory once: vectors another process (a `brain`
# command beside the TUI) wrote later are in Chroma's SQLite but not in that index, and reading
# them fails with "Error finding id" (queries silently miss them). `refresh_location` retires the
# client — kept open for calls in flight, closed by `close_all` — and counts a generation; every
# VectorStore of that location reconnects, to a fresh client that reads the disk, at its next call.
_generations: dict[tuple[str, ...], int] = {}
_retired: list[Any] = []
STALE_INDEX = "Error finding id"  # Chroma's message when its in-memory index is behind the disk


def location_generation(key: tuple[str, ...]) -> int:
    """How many times the location `key` (`client_key`) was refreshed: a VectorStore that saw
    another number reconnects."""
    return _generations.get(key, 0)


def refresh_location(location: str | Path) -> None:
    """Another process changed the embedded store at `location`: read it afresh from now on.
    (A Chroma server is shared by every client: nothing to do.)"""
    if is_url(location):
        return
    key = client_key(location)
    with _clients_lock:
        client = _clients.pop(key, None)
        if client is None:
            return
        _retired.append(client)
        _generations[key] = _generations.get(key, 0) + 1
        from chromadb.api.shared_system_client import SharedSystemClient

        # A new PersistentClient on the same path would otherwise share the old one's system.
        SharedSystemClient._identifier_to_system.pop(getattr(client, "_identifier", key[1]),
                                                     None)


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=True)


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(("http://", "https://"))


def client_key(location: str | Path) -> tuple[str, ...]:
    if is_url(location):
        parts = urlsplit(str(location))
        if not parts.hostname:
            raise VectorStoreError(f"Invalid Chroma server URL {location!r}.")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 8000)
        except ValueError as exc:
            raise VectorStoreError(f"Invalid port in Chroma server URL {location!r}.") from exc
        return ("http", parts.scheme, parts.hostname, str(port))
    return ("path", str(Path(location).expanduser().resolve()))


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                    "all_proxy")


@contextlib.contextmanager
def _proxies_ignored() -> Iterator[None]:
    """The environment without HTTP(S)_PROXY/ALL_PROXY, while a Chroma client is made.

    chromadb builds its httpx client with the default trust_env=True, which reads proxies from
    the environment once, when the client is created: built without them, it never sends the
    user's vectors and texts to a proxy (nor fails behind a dead one). The variables are put
    back at once; `_clients_lock` is held by the caller."""
    import os

    saved = {name: os.environ.pop(name) for name in _PROXY_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _connect(key: tuple[str, ...], location: str | Path) -> Any:
    import chromadb

    if key[0] == "http":
        _, scheme, host, port = key
        try:
            with _proxies_ignored():
                return chromadb.HttpClient(
                    host=host, port=int(port), ssl=scheme == "https", settings=_settings()
                )
        except Exception as exc:  # a server down or refusing: chromadb's words, one error
            raise VectorStoreError(
                f"Cannot reach the Chroma server at {location} ({exc}).",
                hint="start it (`chroma run --path DIR --port N`), or set "
                'store.vector_store = "" to use the embedded store',
            ) from exc
    path = Path(key[1])
    if path.exists() and not path.is_dir():
        raise VectorStoreError(
            f"The vector store location {path} is a file, not a directory.",
            hint="set store.vector_store to a directory, an http:// URL, or leave it empty",
        )
    check_store_file(path)
    _check_writable(path)
    wipe_freed_memory()  # before Chroma's index buffers exist: see memory_hygiene

    try:
        path.mkdir(parents=True, exist_ok=True)
        with rust_panics_silenced():  # a damaged store's panic report: see quiet_panics
            return chromadb.PersistentClient(path=str(path), settings=_settings())
    except BaseException as exc:
        if not isinstance(exc, Exception) and not is_panic(exc):
            raise  # KeyboardInterrupt, SystemExit
        if is_panic(exc) or DAMAGE_WORDS.search(str(exc)):
            raise damaged(path, first_line(exc)) from exc
        log_failure(log, f"opening the vector store at {path} failed", exc, level=logging.INFO)
        raise VectorStoreError(
            f"The vector store at {path} cannot be opened ({first_line(exc)}).",
            hint=NOT_DAMAGE_HINT,
        ) from exc


def _check_writable(path: Path) -> None:
    """Embedded Chroma opens its database for writing (and migrates it) even to read: in a
    folder this process cannot write it fails with its own words; said here, before trying."""
    if can_write(path):
        return
    where = full_or_read_only(OSError(errno.EROFS, "read-only"), path) \
        if _read_only_mount(path) else f"{path} is not writable by this user"
    raise VectorStoreReadOnly(f"The vector store cannot be opened: {where}.",
                              hint="make the home writable to search by meaning again")


def _read_only_mount(path: Path) -> bool:
    import os

    try:
        return bool(os.statvfs(path if path.exists() else path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def shared_client(location: str | Path) -> Any:
    key = client_key(location)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _connect(key, location)
        return client


def delete_collection(client: Any, name: str) -> None:
    from chromadb.errors import NotFoundError

    with contextlib.suppress(NotFoundError, ValueError):  # already gone
        client.delete_collection(name)


def guard(location: str, what: str, fn: Callable[[], T]) -> T:
    """Run a Chroma call, turning its failures into VectorStoreError with a useful hint."""
    try:
        return fn()
    except VectorStoreError:
        raise
    # Not logged: callers branch on the cause (vectors.py: a compacted collection's
    # NotFoundError, a stale index, an allow-list Chroma refuses), kept as __cause__.
    except BaseException as exc:
        if not isinstance(exc, Exception) and not is_panic(exc):
            raise  # KeyboardInterrupt, SystemExit
        if is_url(location):
            raise VectorStoreError(
                f"Could not {what} on the Chroma server at {location} ({first_line(exc)}).",
                hint="check that the server is running and reachable",
            ) from exc
        if is_panic(exc) or DAMAGE_WORDS.search(str(exc)):
            raise damaged(location, first_line(exc)) from exc
        raise VectorStoreError(
            f"Could not {what} in the vector store at {location} ({first_line(exc)}).",
            hint=NOT_DAMAGE_HINT,
        ) from exc


def warm(location: str | Path) -> threading.Thread | None:
    """Import chromadb and connect to `location` on a daemon thread (about a second on a cold
    start), so it overlaps with loading the embedding model; the first real use then finds the
    client cached. Only for a store that exists: warming must not create one. Failures are left
    for that first use to report, with its context."""
    if not is_url(location) and not Path(location).is_dir():
        return None

    def run() -> None:
        try:
            shared_client(location)
        except VectorStoreError:
            return  # the first real use says it, with its context
        except BaseException as exc:  # chromadb panics are BaseExceptions
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            log_failure(log, "warming the vector store failed", exc, level=logging.INFO)

    return start_daemon("vectors-warm", run)


def close_all() -> None:
    """Close every cached client (tests; a long-lived process switching stores). Closing, not
    only forgetting: an embedded client keeps Chroma's SQLite file, its index files and an
    event loop open (about 14 descriptors) until `close()`, so forgotten clients piled up to
    more than a thousand open files in one test process."""
    with _clients_lock:
        clients = [*_clients.values(), *_retired]
        _clients.clear()
        _retired.clear()

    for client in clients:
        try:
            with rust_panics_silenced():
                client.close()
        except BaseException as exc:  # a panic from a damaged store: nothing left to close
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            if not is_panic(exc):
                log_failure(log, "closing a vector store client failed", exc,
                            level=logging.INFO)
