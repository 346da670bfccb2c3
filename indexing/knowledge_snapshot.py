"""Keeping the dense snapshot (dense_snapshot.py) in step with the knowledge index: whether the
file on disk may answer a search right now, and writing it afresh after a change.

A cold search answered from the snapshot never imports Chroma. The snapshot is a copy, so it
answers only while it matches the manifest's token and Chroma's own database looks sound: a
store damaged or deleted since the last sync must be reported by Chroma, never hidden.

The snapshot also holds the current model's vectors by content (`by_content`), so the embedding
cache gives up its copy of them (`trim_cache`): after each refresh the manifest records that a
trim is due (meta `embedding_cache_trim`, in the transaction that records the token), and the
trim clears it once the cache no longer holds what the snapshot holds. A kill between the two
leaves the record, and the next sync trims.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from indexing.errors import log_failure
from indexing.knowledge_types import META_COLLECTION, META_DIMENSION
from indexing.manifest import CACHE_TRIM_META, SNAPSHOT_META, Manifest
from indexing.vector_errors import VectorStoreError, check_store_file

if TYPE_CHECKING:
    from indexing.dense_snapshot import DenseSnapshot
    from indexing.vectors import VectorStore

log = logging.getLogger(__name__)


def _looks_like_chroma(directory: Path) -> bool:
    """Chroma's own database is there and undamaged as far as a few milliseconds can tell
    (`check_store_file`: header, schema, catalog): a store that was damaged or deleted since the
    last sync must not be hidden by the snapshot."""
    if not (directory / "chroma.sqlite3").is_file():
        return False
    try:
        check_store_file(directory)
    except VectorStoreError:
        return False
    return True


class SnapshotKeeper:
    """The snapshot of one knowledge index's current collection (held by its KnowledgeBase)."""

    def __init__(self, manifest: Manifest, vector_location: str | Path) -> None:
        self.manifest = manifest
        self.vector_location = vector_location
        self._snapshot: DenseSnapshot | None = None  # the last one loaded
        # The stat of Chroma's database when it last passed `check_store_file`: the check
        # (a few ms) runs again only when the file changed, not on every dense search.
        self._store_passed: tuple[int, int, int] | None = None

    def _path(self, collection: str | None = None) -> Path | None:
        collection = collection or self.manifest.get_meta(META_COLLECTION)
        if collection is None or not isinstance(self.vector_location, Path | str) or str(
            self.vector_location
        ).startswith(("http://", "https://")):
            return None
        from indexing.dense_snapshot import snapshot_file

        return snapshot_file(Path(self.vector_location), collection)

    def fresh(self) -> DenseSnapshot | None:
        """The snapshot if it matches the index right now, else None (ask Chroma)."""
        path = self._path()
        if path is None or not path.is_file() or not self._store_looks_sound(path.parent):
            # Gone, or a damaged store: that must be reported by Chroma, not hidden by a copy.
            return None
        return self._recorded()

    def _recorded(self) -> DenseSnapshot | None:
        """The snapshot whose token the manifest records, without `fresh`'s look at Chroma's
        files (for the cache trim, which asks what the file holds, not whether to search)."""
        token = self.manifest.get_meta(SNAPSHOT_META)
        if not token:
            return None
        cached = self._snapshot
        if cached is not None and cached.token == token:
            return cached
        path = self._path()
        if path is None or not path.is_file():
            return None
        from indexing.dense_snapshot import load

        snapshot = load(path)
        if snapshot is None or snapshot.token != token or (
            snapshot.collection != self.manifest.get_meta(META_COLLECTION)
        ):
            return None
        self._snapshot = snapshot
        return snapshot

    def _of_collection(self, collection: str) -> DenseSnapshot | None:
        """The last snapshot written for `collection`, whatever its token: right by content (a
        text's vector under one model never changes), if not for searching."""
        cached = self._snapshot
        if cached is not None and cached.collection == collection:
            return cached
        path = self._path(collection)
        if path is None or not path.is_file():
            return None
        from indexing.dense_snapshot import load

        snapshot = load(path)
        if snapshot is None or snapshot.collection != collection:
            return None
        self._snapshot = snapshot  # `fresh` still checks the token before a search uses it
        return snapshot

    def by_content(self, collection: str) -> Callable[[Sequence[str]], dict[str, np.ndarray]]:
        """A sync's lookup of vectors by content hash in `collection`'s snapshot (a moved file,
        a re-chunked text, a rebuild, a model switched back): the file is read on the first
        call, so a sync that embeds nothing never reads it."""
        loaded: list[DenseSnapshot | None] = []

        def lookup(keys: Sequence[str]) -> dict[str, np.ndarray]:
            if not loaded:
                loaded.append(self._of_collection(collection))
            snapshot = loaded[0]
            return {} if snapshot is None else snapshot.by_content(keys)

        return lookup

    def has_content(self) -> bool:
        """The current snapshot holds content hashes (files from before them do not)."""
        snapshot = self._recorded()
        return snapshot is not None and snapshot.hashes is not None

    def trim_cache(self, forget: Callable[[Collection[str]], int]) -> int | None:
        """If a trim is due and the current snapshot holds content hashes: `forget` (the
        embedding cache's delete) the texts it holds, then clear the record. Returns the
        entries deleted, None when no trim ran."""
        if self.manifest.get_meta(CACHE_TRIM_META) is None:
            return None
        snapshot = self._recorded()
        if snapshot is None or snapshot.hashes is None:
            return None  # nothing else holds those vectors yet: the cache keeps them
        removed = forget(snapshot.content_keys())
        with self.manifest.transaction():
            self.manifest.set_meta(CACHE_TRIM_META, None)
        return removed

    def _store_looks_sound(self, directory: Path) -> bool:
        """`_looks_like_chroma`, re-checked only when the database file changed since it last
        passed (any write that could damage it changes its size, time or inode)."""
        try:
            st = (directory / "chroma.sqlite3").stat()
        except OSError:
            return False
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp == self._store_passed:
            return True
        sound = _looks_like_chroma(directory)
        self._store_passed = stamp if sound else None
        return sound

    def refresh(self, recorded_store: Callable[[], VectorStore | None]) -> None:
        """After a change, under the index lock, when no token is recorded: write the snapshot
        of the current chunks (reusing the previous one's rows; `recorded_store` opens the
        collection for the rest), then record its token. Any failure leaves no token: searches
        ask Chroma, the next sync tries again."""
        path = self._path()
        store = recorded_store() if path is not None else None
        if path is None or store is None or not path.parent.is_dir():
            return
        from indexing.dense_snapshot import write

        try:
            hashes = self.manifest.chunk_hashes()
            ids = sorted(hashes)
            previous = self._of_collection(store.name)
            dimension = int(self.manifest.get_meta(META_DIMENSION) or 0)
            matrix = _unit_rows(ids, previous, store, dimension)
            if matrix is None:
                return  # Chroma lacks vectors (a repair is due): no snapshot until it has them
            written = write(path, store.name, ids, matrix, [hashes[i] for i in ids])
            self._snapshot = written  # as a load would read it: no second read of the file
            with self.manifest.transaction():
                self.manifest.set_meta(SNAPSHOT_META, written.token)
                # The cache's copies of these vectors can go now (`trim_cache`).
                self.manifest.set_meta(CACHE_TRIM_META, "due")
        except Exception as exc:  # speed only: searches fall back to Chroma
            log_failure(log, f"could not write the dense snapshot {path}", exc,
                        foreseen=(OSError,))


# Vectors asked of Chroma at a time: the working set of a refresh stays this many vectors
# (~6 MB at 384 dimensions) above the matrix itself.
_FETCH_BATCH = 4096


class StoredVectors(Protocol):
    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...


def _unit_rows(ids: list[str], previous: DenseSnapshot | None, store: StoredVectors,
               dimension: int) -> np.ndarray | None:
    """The unit vectors of `ids`, in order, filled into one preallocated matrix: rows the
    previous snapshot holds are copied, the rest read from Chroma a batch at a time (None when
    Chroma lacks one). Gathering every vector as its own array and stacking them at the end
    peaked at 1 GB on a 98k-chunk cold index (550 MB during the sync itself)."""
    old = previous.row_of() if previous is not None else {}
    if previous is not None and previous.matrix.shape[0]:
        if dimension and previous.matrix.shape[1] != dimension:
            old = {}  # made by another model: nothing to copy
        else:
            dimension = int(previous.matrix.shape[1])
    kept = [(row, old[i]) for row, i in enumerate(ids) if i in old]
    missing = [(row, i) for row, i in enumerate(ids) if i not in old]
    matrix: np.ndarray | None = None
    if dimension:
        matrix = np.empty((len(ids), dimension), dtype=np.float32)
    if kept and previous is not None and matrix is not None:
        new_rows, old_rows = (np.fromiter(side, dtype=np.int64, count=len(kept))
                              for side in zip(*kept, strict=True))
        matrix[new_rows] = previous.matrix[old_rows]  # unit rows already
    for start in range(0, len(missing), _FETCH_BATCH):
        part = missing[start : start + _FETCH_BATCH]
        found = store.get_embeddings([i for _, i in part])
        if len(found) < len(part):
            return None
        block = np.stack([np.asarray(found[i], dtype=np.float32).reshape(-1) for _, i in part])
        if matrix is not None and block.shape[1] != matrix.shape[1]:
            return None  # Chroma holds vectors of another size: a repair is due
        if matrix is None:
            matrix = np.empty((len(ids), block.shape[1]), dtype=np.float32)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        matrix[[row for row, _ in part]] = block / norms
    if matrix is None:
        matrix = np.zeros((len(ids), dimension), dtype=np.float32)
    return matrix
