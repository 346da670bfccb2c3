"""Vectors in ChromaDB: embedded (a directory) or a Chroma server (`http://host:port`).

Each collection records the embedding model id and dimension it was built with. Opening it
with another model raises `EmbeddingModelMismatch` (what to run to re-embed) instead of letting
Chroma fail later with a dimension error. Chroma is imported lazily (it takes ~1 s), and every
Chroma failure surfaces as a `VectorStoreError` with a message meant for the user
(vector_errors.py; the clients and the guard around each call are chroma_clients.py).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from indexing.chroma_clients import (
    STALE_INDEX,
    client_key,
    delete_collection,
    guard,
    is_url,
    location_generation,
    refresh_location,
    shared_client,
)
from indexing.scrub import scrub_connection
from indexing.vector_errors import EmbeddingModelMismatch, VectorStoreError

_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]")
_MAX_BATCH = 2000  # below Chroma's limit (5461 embedded); keeps server requests small
_PAGE = 5000

T = TypeVar("T")


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
        self._key = client_key(location)
        self._generation = location_generation(self._key)

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
        client = shared_client(location)
        metadata = {"hnsw:space": "cosine", "model_id": model_id, "dimension": int(dimension)}

        def create() -> Any:
            if recreate:
                delete_collection(client, collection)
            return client.get_or_create_collection(
                collection, metadata=metadata, embedding_function=None
            )

        if not is_url(location):
            guard(where, "finish an interrupted compaction",
                   lambda: _finish_compaction(client, collection))
        handle = guard(where, "open the collection", create)
        stored = dict(handle.metadata or {})
        stored_model = stored.get("model_id")
        stored_dimension = stored.get("dimension")
        if stored_model != model_id or stored_dimension != dimension:
            if stored_model is None and guard(where, "count vectors", handle.count) == 0:
                # An empty collection someone else created: replace it, since its distance
                # function cannot be changed in place.
                recreate = True
                handle = guard(where, "recreate the collection", create)
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
        if location_generation(self._key) != self._generation:
            self._reconnect()
        try:
            return guard(self.location, what, fn)
        except VectorStoreError as exc:
            from chromadb.errors import NotFoundError

            if STALE_INDEX in str(exc.__cause__ or ""):
                # Written by another process since this one read the index: read it afresh,
                # once (a store that still fails then is reported as before).
                refresh_location(self.location)
                self._reconnect()
                return guard(self.location, what, fn)
            if not isinstance(exc.__cause__, NotFoundError):
                raise
            # Compacted (here or by another process): the name now holds a new collection.
            self._collection = guard(
                self.location, "reopen the collection",
                lambda: self._client.get_collection(self.name, embedding_function=None))
            return guard(self.location, what, fn)

    def _reconnect(self) -> None:
        """Use this location's current client (see `refresh_location`)."""
        generation = location_generation(self._key)
        client = shared_client(self.location)
        self._collection = guard(
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
        guard(self.location, "drop the collection", lambda: self._delete())
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
        if is_url(self.location):
            return self.count()
        client, name = self._client, self.name
        metadata = dict(self._collection.metadata or {})
        temp = _compaction_name(name)

        def copy() -> int:
            delete_collection(client, temp)
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

        self._collection = guard(self.location, "compact the collection", swap)
        self.scrub()
        return kept

    def scrub(self) -> None:
        """Remove what deleted collections leave in an embedded store's files (see
        `scrub_store`); a no-op for a server."""
        if is_url(self.location):
            return
        try:
            scrub_store(self.location)
        except (OSError, sqlite3.Error) as exc:
            raise VectorStoreError(
                f"Could not clean the vector store's files at {self.location} ({exc}).",
                hint="run the removal again once no other second-brain process is busy",
            ) from exc

    def _delete(self) -> None:
        delete_collection(self._client, self.name)

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
    client = shared_client(location)
    names = guard(str(location), "list collections",
                   lambda: [getattr(c, "name", c) for c in client.list_collections()])
    if collection not in names:
        return 0
    handle = guard(str(location), "open the collection",
                    lambda: client.get_collection(collection, embedding_function=None))
    return int(guard(str(location), "count vectors", handle.count))


def _compaction_name(name: str) -> str:
    return f"{name}.compact"


def _finish_compaction(client: Any, name: str) -> None:
    """Settle a compaction a kill interrupted (see `VectorStore.compact`)."""
    names = {getattr(c, "name", c) for c in client.list_collections()}
    temp = _compaction_name(name)
    if temp not in names:
        return
    if name in names:
        delete_collection(client, temp)  # the copy was partial: the original is complete
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


