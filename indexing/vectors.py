"""Vectors in ChromaDB: embedded (a directory) or a Chroma server (`http://host:port`).

Each collection records the embedding model id and dimension it was built with. Opening it
with another model raises `EmbeddingModelMismatch` (what to run to re-embed) instead of letting
Chroma fail later with a dimension error. Chroma is imported lazily (it takes ~1 s), and every
Chroma failure surfaces as a `VectorStoreError` with a message meant for the user.
"""

from __future__ import annotations

import contextlib
import errno
import re
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from indexing.errors import HintedError

_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")
_MAX_BATCH = 2000  # below Chroma's limit (5461 embedded); keeps server requests small
_PAGE = 5000

T = TypeVar("T")


class VectorStoreError(HintedError):
    """The vector store cannot be used; the message (and hint) are meant for the user."""


class VectorStoreDamaged(VectorStoreError):
    """The embedded store's database is damaged: it can only be rebuilt (see `recovery_hint`)."""


class VectorStoreReadOnly(VectorStoreError):
    """The embedded store is in a folder this process cannot write (a read-only mount): the
    embedded Chroma cannot open it at all, so searches go on by keywords and say so."""


def recovery_hint(directory: str | Path) -> str:
    return (f"move {directory} aside, then run `brain index --rebuild`, `brain memory "
            "reindex` and `brain sessions reindex`: your files, memories and chats are "
            "untouched and embeddings come back from the cache")


# An error that does not say damage (a bad request, a full disk, a lock) must not advise moving
# the store aside: that throws away every vector. Only a verified damage gets that advice.
_NOT_DAMAGE_HINT = "`brain doctor` checks whether the store is damaged and says what to do"


def _damaged(directory: str | Path, detail: object) -> VectorStoreDamaged:
    db = Path(directory) / "chroma.sqlite3"
    return VectorStoreDamaged(
        f"The vector store cannot be used: {db} is damaged ({_short(detail)}).",
        hint=recovery_hint(directory))


def _short(detail: object) -> str:
    """One short line: SQLite quotes the whole undecodable text, Rust the whole panic."""
    text = str(detail).strip()
    column = re.search(r"decode to UTF-8 column '([^']+)'", text)
    if column:
        return f"text that is not UTF-8 in its {column.group(1)!r} column"
    first = (text.splitlines() or [""])[0]
    return first if len(first) <= 120 else first[:117] + "…"


def _is_panic(exc: BaseException) -> bool:
    """A Rust panic inside Chroma (pyo3's PanicException derives from BaseException, so an
    `except Exception` does not see it)."""
    return type(exc).__name__ == "PanicException"


_DAMAGE = re.compile(r"malformed|not a database|disk image|database corrupt", re.IGNORECASE)
# Chroma's catalog: small tables it decodes while starting. A damaged page or a byte that is
# not UTF-8 in one of them makes the Rust side panic — sometimes in a thread that cannot unwind,
# which aborts the whole process — so they are read here first, in Python, where damage is an
# ordinary exception.
_CATALOG = ("collections", "collection_metadata", "segments", "segment_metadata", "tenants",
            "databases", "embeddings_queue_config", "max_seq_id", "migrations")


def check_store_file(directory: str | Path) -> None:
    """Raise VectorStoreDamaged if the embedded store's database is visibly damaged (empty,
    not SQLite, a damaged schema or catalog); a few milliseconds, whatever the store's size."""
    db = Path(directory) / "chroma.sqlite3"
    try:
        with db.open("rb") as handle:
            header = handle.read(16)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise VectorStoreError(f"Cannot read the vector store file {db} ({exc.strerror}).",
                               hint="check the permissions of the data directory") from exc
    if not header:
        raise _damaged(directory, "the file is empty")
    if header != b"SQLite format 3\x00":
        raise _damaged(directory, "not a SQLite database")
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    try:
        tables = {str(name) for name, _sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'")}
        for table in _CATALOG:
            if table in tables:
                conn.execute(f'SELECT * FROM "{table}"').fetchall()
    except UnicodeDecodeError as exc:
        raise _damaged(directory, f"text that is not UTF-8: {exc.reason}") from exc
    except sqlite3.OperationalError as exc:
        if _DAMAGE.search(str(exc)) or "decode" in str(exc).lower():
            raise _damaged(directory, exc) from exc
        # Locked by another process, or similar: not damage; Chroma will wait or say so.
    except sqlite3.DatabaseError as exc:
        raise _damaged(directory, exc) from exc
    finally:
        conn.close()


class EmbeddingModelMismatch(VectorStoreError):
    """The collection holds vectors of another embedding model (or dimension)."""

    def __init__(
        self,
        collection: str,
        *,
        stored_model: str | None,
        stored_dimension: int | None,
        model_id: str,
        dimension: int,
    ) -> None:
        stored = (
            f"{stored_model} ({stored_dimension}-d)"
            if stored_model
            else "another program (no model recorded)"
        )
        super().__init__(
            f"The {collection!r} vectors were built with {stored}, but the configured embedding "
            f"model is {model_id} ({dimension}-d); they cannot be searched together.",
            hint="run `brain index --sync` to re-embed everything into a fresh collection "
            "(cached embeddings are reused), or switch embedding.model back",
        )
        self.collection = collection
        self.stored_model = stored_model
        self.stored_dimension = stored_dimension
        self.model_id = model_id
        self.dimension = dimension


# -- clients: one per location per process -------------------------------------------------

_clients: dict[tuple[str, ...], Any] = {}
_clients_lock = threading.Lock()
# An embedded client reads its HNSW index into memory once: vectors another process (a `brain`
# command beside the TUI) wrote later are in Chroma's SQLite but not in that index, and reading
# them fails with "Error finding id" (queries silently miss them). `refresh_location` retires the
# client — kept open for calls in flight, closed by `close_all` — and counts a generation; every
# VectorStore of that location reconnects, to a fresh client that reads the disk, at its next call.
_generations: dict[tuple[str, ...], int] = {}
_retired: list[Any] = []
_STALE_INDEX = "Error finding id"  # Chroma's message when its in-memory index is behind the disk


def refresh_location(location: str | Path) -> None:
    """Another process changed the embedded store at `location`: read it afresh from now on.
    (A Chroma server is shared by every client: nothing to do.)"""
    if _is_url(location):
        return
    key = _client_key(location)
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


def _is_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(("http://", "https://"))


def _client_key(location: str | Path) -> tuple[str, ...]:
    if _is_url(location):
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
        except Exception as exc:
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
    from indexing.memory_hygiene import wipe_freed_memory

    check_store_file(path)
    _check_writable(path)
    wipe_freed_memory()  # before Chroma's index buffers exist: see memory_hygiene
    from indexing.quiet_panics import rust_panics_silenced

    try:
        path.mkdir(parents=True, exist_ok=True)
        with rust_panics_silenced():  # a damaged store's panic report: see quiet_panics
            return chromadb.PersistentClient(path=str(path), settings=_settings())
    except BaseException as exc:
        if not isinstance(exc, Exception) and not _is_panic(exc):
            raise  # KeyboardInterrupt, SystemExit
        if _is_panic(exc) or _DAMAGE.search(str(exc)):
            raise _damaged(path, _first_line(exc)) from exc
        raise VectorStoreError(
            f"The vector store at {path} cannot be opened ({_first_line(exc)}).",
            hint=_NOT_DAMAGE_HINT,
        ) from exc


def _check_writable(path: Path) -> None:
    """Embedded Chroma opens its database for writing (and migrates it) even to read: in a
    folder this process cannot write it fails with its own words; said here, before trying."""
    from indexing.filesystem import can_write, full_or_read_only

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


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _client(location: str | Path) -> Any:
    key = _client_key(location)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = _connect(key, location)
        return client


# -- the store -------------------------------------------------------------------------------


def _clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any] | None:
    # Chroma accepts str/int/float/bool values and rejects empty dicts.
    if not metadata:
        return None
    clean = {str(k): v for k, v in metadata.items() if isinstance(v, str | int | float | bool)}
    return clean or None


def _batches(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


class VectorStore:
    """One Chroma collection of L2-normalised embeddings of one model, searched by cosine."""

    def __init__(
        self, client: Any, collection: Any, location: str, *, model_id: str, dimension: int
    ) -> None:
        self._client = client
        self._collection = collection
        self.location = location
        self.name = str(collection.name)
        self.model_id = model_id
        self.dimension = dimension
        self._dropped = False
        self._key = _client_key(location)
        self._generation = _generations.get(self._key, 0)

    @classmethod
    def open(
        cls,
        location: str | Path,
        collection: str,
        *,
        model_id: str,
        dimension: int,
        recreate: bool = False,
    ) -> VectorStore:
        """Open (creating if needed) `collection` at `location` for this model.

        Raises `EmbeddingModelMismatch` when it holds another model's vectors; `recreate=True`
        deletes it first (the way to re-embed with a new model).
        """
        if not _COLLECTION_NAME.fullmatch(collection):
            raise VectorStoreError(
                f"Invalid collection name {collection!r}: use 3-512 letters, digits, . _ -"
            )
        if dimension <= 0:
            raise VectorStoreError(f"Invalid embedding dimension {dimension}.")
        where = str(location)
        client = _client(location)
        metadata = {"hnsw:space": "cosine", "model_id": model_id, "dimension": int(dimension)}

        def create() -> Any:
            if recreate:
                _delete_collection(client, collection)
            return client.get_or_create_collection(
                collection, metadata=metadata, embedding_function=None
            )

        if not _is_url(location):
            _guard(where, "finish an interrupted compaction",
                   lambda: _finish_compaction(client, collection))
        handle = _guard(where, "open the collection", create)
        stored = dict(handle.metadata or {})
        stored_model = stored.get("model_id")
        stored_dimension = stored.get("dimension")
        if stored_model != model_id or stored_dimension != dimension:
            if stored_model is None and _guard(where, "count vectors", handle.count) == 0:
                # An empty collection someone else created: replace it, since its distance
                # function cannot be changed in place.
                recreate = True
                handle = _guard(where, "recreate the collection", create)
            else:
                raise EmbeddingModelMismatch(
                    collection,
                    stored_model=stored_model,
                    stored_dimension=stored_dimension,
                    model_id=model_id,
                    dimension=dimension,
                )
        return cls(client, handle, where, model_id=model_id, dimension=int(dimension))

    # -- helpers ------------------------------------------------------------------------------

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        if self._dropped:
            raise VectorStoreError(f"The {self.name!r} collection was dropped; reopen it.")
        if _generations.get(self._key, 0) != self._generation:
            self._reconnect()
        try:
            return _guard(self.location, what, fn)
        except VectorStoreError as exc:
            from chromadb.errors import NotFoundError

            if _STALE_INDEX in str(exc.__cause__ or ""):
                # Written by another process since this one read the index: read it afresh,
                # once (a store that still fails then is reported as before).
                refresh_location(self.location)
                self._reconnect()
                return _guard(self.location, what, fn)
            if not isinstance(exc.__cause__, NotFoundError):
                raise
            # Compacted (here or by another process): the name now holds a new collection.
            self._collection = _guard(
                self.location, "reopen the collection",
                lambda: self._client.get_collection(self.name, embedding_function=None))
            return _guard(self.location, what, fn)

    def _reconnect(self) -> None:
        """Use this location's current client (see `refresh_location`)."""
        generation = _generations.get(self._key, 0)
        client = _client(self.location)
        self._collection = _guard(
            self.location, "reopen the collection",
            lambda: client.get_collection(self.name, embedding_function=None))
        self._client = client
        self._generation = generation

    def _op(self, method: str, **kwargs: Any) -> Callable[[], Any]:
        """A call of the collection's `method`, looked up when it runs: `_call` retries on the
        reopened collection after a compaction elsewhere replaced it."""
        return lambda: getattr(self._collection, method)(**kwargs)

    def _matrix(self, embeddings: Sequence[Sequence[float]] | Sequence[float] | np.ndarray,
                n: int) -> np.ndarray:
        matrix = np.asarray(embeddings, dtype=np.float32)
        if matrix.ndim == 1 and n == 1:
            matrix = matrix.reshape(1, -1)
        if matrix.ndim != 2 or matrix.shape[0] != n:
            raise ValueError(f"expected {n} embeddings, got an array of shape {matrix.shape}")
        if matrix.shape[1] != self.dimension:
            raise EmbeddingModelMismatch(
                self.name,
                stored_model=self.model_id,
                stored_dimension=self.dimension,
                model_id=f"a model producing {matrix.shape[1]}-d vectors",
                dimension=int(matrix.shape[1]),
            )
        return matrix

    # -- writes -------------------------------------------------------------------------------

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]] | np.ndarray,
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> None:
        """Insert or replace vectors (in batches Chroma accepts)."""
        ids = [str(i) for i in ids]
        if not ids:
            return
        if len(set(ids)) != len(ids):
            raise ValueError("upsert ids must be unique")
        matrix = self._matrix(embeddings, len(ids))
        if metadatas is not None and len(metadatas) != len(ids):
            raise ValueError(f"expected {len(ids)} metadatas, got {len(metadatas)}")
        for part in _batches(len(ids), _MAX_BATCH):
            metas = None
            if metadatas is not None:
                cleaned = [_clean_metadata(m) for m in metadatas[part]]
                metas = cleaned if any(m is not None for m in cleaned) else None
            batch_ids = ids[part]
            batch_vectors = matrix[part]
            self._call("store vectors", self._op(
                "upsert", ids=batch_ids, embeddings=batch_vectors, metadatas=metas))

    def delete(self, ids: Sequence[str]) -> None:
        """Remove vectors by id; unknown ids are ignored."""
        ids = [str(i) for i in ids]
        for part in _batches(len(ids), _MAX_BATCH):
            batch = ids[part]
            self._call("delete vectors", self._op("delete", ids=batch))

    def drop(self) -> None:
        """Delete the whole collection, leaving no trace of its vectors in the store's files;
        this object is unusable afterwards."""
        _guard(self.location, "drop the collection", lambda: self._delete())
        self._dropped = True
        self.scrub()

    def compact(self) -> int:
        """Rewrite the collection with only its live vectors, then scrub the store's files.

        Chroma's delete only marks a vector deleted: its bytes stay in the HNSW segment
        (`data_level0.bin`) and, with its metadata, in `chroma.sqlite3`'s log and free pages.
        After a removal the user expects to be final (`brain folders rm`, forgetting memories),
        the live vectors are copied into a fresh collection that then takes the old one's
        name, and the old segment is deleted. Crash-safe: a kill before the rename leaves the
        old collection complete (the partial copy is discarded on the next open), a kill after
        the old one is deleted leaves the complete copy, renamed on the next open. Embedded
        stores only (a server keeps its own files). Returns the vectors kept.
        """
        if _is_url(self.location):
            return self.count()
        client, name = self._client, self.name
        metadata = dict(self._collection.metadata or {})
        temp = _compaction_name(name)

        def copy() -> int:
            _delete_collection(client, temp)
            target = client.create_collection(temp, metadata=metadata, embedding_function=None)
            copied, offset = 0, 0
            while True:
                page = self._collection.get(include=["embeddings", "metadatas"],
                                            limit=_MAX_BATCH, offset=offset)
                ids = [str(i) for i in page.get("ids") or []]
                if not ids:
                    return copied
                metadatas = page.get("metadatas")
                target.upsert(ids=ids, embeddings=page["embeddings"],
                              metadatas=metadatas if metadatas and any(metadatas) else None)
                copied += len(ids)
                offset += len(ids)

        kept = self._call("compact the collection", copy)

        def swap() -> Any:
            client.delete_collection(name)
            renamed = client.get_collection(temp, embedding_function=None)
            renamed.modify(name=name)
            return client.get_collection(name, embedding_function=None)

        self._collection = _guard(self.location, "compact the collection", swap)
        self.scrub()
        return kept

    def scrub(self) -> None:
        """Remove what deleted collections leave in an embedded store's files (see
        `scrub_store`); a no-op for a server."""
        if _is_url(self.location):
            return
        try:
            scrub_store(self.location)
        except (OSError, sqlite3.Error) as exc:
            raise VectorStoreError(
                f"Could not clean the vector store's files at {self.location} ({exc}).",
                hint="run the removal again once no other second-brain process is busy",
            ) from exc

    def _delete(self) -> None:
        _delete_collection(self._client, self.name)

    # -- reads --------------------------------------------------------------------------------

    def count(self) -> int:
        return int(self._call("count vectors", lambda: self._collection.count()))

    def query(
        self,
        embedding: Sequence[float] | np.ndarray,
        k: int,
        *,
        where: Mapping[str, Any] | None = None,
        ids: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """The `k` nearest ids with their cosine similarity (1 = same direction), best first.

        `where` is a Chroma metadata filter (e.g. `{"root": "/notes"}`); `ids` restricts the
        search to those ids (2-4x faster than a `where` `$in` over the same items' sources,
        measured on 10k vectors). Both may be combined.
        """
        if k <= 0 or (ids is not None and not ids):
            return []
        vector = self._matrix(embedding, 1)
        allowed = sorted({str(i) for i in ids}) if ids is not None else None

        def search() -> Any:
            return self._collection.query(
                query_embeddings=vector,
                n_results=int(k),
                where=dict(where) if where else None,
                ids=allowed,
                include=["distances"],
            )

        try:
            result = self._call("search vectors", search)
        except VectorStoreError:
            if allowed is None:
                raise
            # Chroma refuses an allow-list naming an id it does not hold (e.g. a chunk whose
            # vector a crash never wrote): keep the ids it has and ask again.
            allowed = self._existing(allowed)
            if not allowed:
                return []
            result = self._call("search vectors", search)
        found = (result.get("ids") or [[]])[0]
        distances = (result.get("distances") or [[]])[0]
        return [(str(i), 1.0 - float(d)) for i, d in zip(found, distances, strict=True)]

    def _existing(self, ids: Sequence[str]) -> list[str]:
        present: list[str] = []
        for part in _batches(len(ids), _MAX_BATCH):
            batch = list(ids[part])
            page = self._call("read vectors", self._op("get", ids=batch, include=[]))
            present.extend(str(i) for i in page.get("ids") or [])
        return sorted(present)

    def ids(self) -> list[str]:
        """Every stored id (paged, for consistency checks against the manifest)."""
        out: list[str] = []
        offset = 0
        while True:
            page = self._call("list vectors", self._op(
                "get", include=[], limit=_PAGE, offset=offset))
            batch = [str(i) for i in page.get("ids") or []]
            out.extend(batch)
            if len(batch) < _PAGE:
                return out
            offset += _PAGE

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by id (missing ids are absent), e.g. to re-use them for moved files."""
        found: dict[str, np.ndarray] = {}
        wanted = [str(i) for i in ids]
        for part in _batches(len(wanted), _MAX_BATCH):
            batch = wanted[part]
            page = self._call("read vectors", self._op(
                "get", ids=batch, include=["embeddings"]))
            vectors = page.get("embeddings")
            if vectors is None:
                continue
            for item_id, vector in zip(page.get("ids") or [], vectors, strict=True):
                found[str(item_id)] = np.asarray(vector, dtype=np.float32)
        return found


def count_vectors(location: str | Path, collection: str) -> int:
    """Vectors in `collection` at `location`, 0 when it does not exist; opens no model and
    creates nothing but the client (for consistency checks)."""
    client = _client(location)
    names = _guard(str(location), "list collections",
                   lambda: [getattr(c, "name", c) for c in client.list_collections()])
    if collection not in names:
        return 0
    handle = _guard(str(location), "open the collection",
                    lambda: client.get_collection(collection, embedding_function=None))
    return int(_guard(str(location), "count vectors", handle.count))


def _compaction_name(name: str) -> str:
    return f"{name}.compact"


def _finish_compaction(client: Any, name: str) -> None:
    """Settle a compaction a kill interrupted (see `VectorStore.compact`)."""
    names = {getattr(c, "name", c) for c in client.list_collections()}
    temp = _compaction_name(name)
    if temp not in names:
        return
    if name in names:
        _delete_collection(client, temp)  # the copy was partial: the original is complete
    else:
        client.get_collection(temp, embedding_function=None).modify(name=name)


_SEGMENT_DIR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def scrub_store(location: str | Path) -> None:
    """Leave nothing of deleted collections in an embedded store's files.

    Chroma (1.5) keeps a deleted collection's segment directory (its vectors, in HNSW's
    `data_level0.bin`) and its rows linger in `chroma.sqlite3`'s free pages. Directories of
    segments Chroma no longer knows are removed and the database is rewritten (VACUUM) without
    its free pages.
    """
    import shutil

    from indexing.scrub import scrub_connection

    root = Path(location)
    db_path = root / "chroma.sqlite3"
    if not db_path.exists():
        return
    conn = sqlite3.connect(str(db_path), timeout=30.0, isolation_level=None)
    try:
        live = {str(row[0]) for row in conn.execute("SELECT id FROM segments")}
        for entry in root.iterdir():
            if entry.is_dir() and _SEGMENT_DIR.fullmatch(entry.name) and entry.name not in live:
                shutil.rmtree(entry, ignore_errors=True)
        scrub_connection(conn, label=f"vector store {db_path}")
    finally:
        conn.close()


def _delete_collection(client: Any, name: str) -> None:
    from chromadb.errors import NotFoundError

    with contextlib.suppress(NotFoundError, ValueError):  # already gone
        client.delete_collection(name)


def _guard(location: str, what: str, fn: Callable[[], T]) -> T:
    """Run a Chroma call, turning its failures into VectorStoreError with a useful hint."""
    try:
        return fn()
    except VectorStoreError:
        raise
    except BaseException as exc:
        if not isinstance(exc, Exception) and not _is_panic(exc):
            raise  # KeyboardInterrupt, SystemExit
        if _is_url(location):
            raise VectorStoreError(
                f"Could not {what} on the Chroma server at {location} ({_first_line(exc)}).",
                hint="check that the server is running and reachable",
            ) from exc
        if _is_panic(exc) or _DAMAGE.search(str(exc)):
            raise _damaged(location, _first_line(exc)) from exc
        raise VectorStoreError(
            f"Could not {what} in the vector store at {location} ({_first_line(exc)}).",
            hint=_NOT_DAMAGE_HINT,
        ) from exc


def warm(location: str | Path) -> threading.Thread | None:
    """Import chromadb and connect to `location` on a daemon thread (about a second on a cold
    start), so it overlaps with loading the embedding model; the first real use then finds the
    client cached. Only for a store that exists: warming must not create one. Failures are left
    for that first use to report, with its context."""
    if not _is_url(location) and not Path(location).is_dir():
        return None

    def run() -> None:
        try:
            _client(location)
        except BaseException:  # chromadb panics are BaseExceptions; the real use reports
            return

    thread = threading.Thread(target=run, name="vectors-warm", daemon=True)
    thread.start()
    return thread


def close_all() -> None:
    """Close every cached client (tests; a long-lived process switching stores). Closing, not
    only forgetting: an embedded client keeps Chroma's SQLite file, its index files and an
    event loop open (about 14 descriptors) until `close()`, so forgotten clients piled up to
    more than a thousand open files in one test process."""
    with _clients_lock:
        clients = [*_clients.values(), *_retired]
        _clients.clear()
        _retired.clear()
    from indexing.quiet_panics import rust_panics_silenced

    for client in clients:
        try:
            with rust_panics_silenced():
                client.close()
        except BaseException as exc:  # a panic from a damaged store: nothing left to close
            if not isinstance(exc, Exception) and not _is_panic(exc):
                raise
