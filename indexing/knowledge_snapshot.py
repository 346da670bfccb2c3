"""Keeping the dense snapshot (dense_snapshot.py) in step with the knowledge index: whether the
file on disk may answer a search right now, and writing it afresh after a change.

A cold search answered from the snapshot never imports Chroma. The snapshot is a copy, so it
answers only while it matches the manifest's token and Chroma's own database looks sound: a
store damaged or deleted since the last sync must be reported by Chroma, never hidden.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from indexing.knowledge_types import META_COLLECTION, META_DIMENSION
from indexing.manifest import SNAPSHOT_META, Manifest

if TYPE_CHECKING:
    from indexing.dense_snapshot import DenseSnapshot
    from indexing.vectors import VectorStore

log = logging.getLogger(__name__)


def _looks_like_chroma(directory: Path) -> bool:
    """Chroma's own database is there and undamaged as far as a few milliseconds can tell
    (`check_store_file`: header, schema, catalog): a store that was damaged or deleted since the
    last sync must not be hidden by the snapshot."""
    from indexing.vector_errors import VectorStoreError, check_store_file

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

    def _path(self) -> Path | None:
        collection = self.manifest.get_meta(META_COLLECTION)
        if collection is None or not isinstance(self.vector_location, Path | str) or str(
            self.vector_location
        ).startswith(("http://", "https://")):
            return None
        from indexing.dense_snapshot import snapshot_file

        return snapshot_file(Path(self.vector_location), collection)

    def fresh(self) -> DenseSnapshot | None:
        """The snapshot if it matches the index right now, else None (ask Chroma)."""
        token = self.manifest.get_meta(SNAPSHOT_META)
        if not token:
            return None
        path = self._path()
        if path is None or not path.is_file() or not self._store_looks_sound(path.parent):
            # Gone, or a damaged store: that must be reported by Chroma, not hidden by a copy.
            return None
        cached = self._snapshot
        if cached is not None and cached.token == token:
            return cached
        from indexing.dense_snapshot import load

        snapshot = load(path)
        if snapshot is None or snapshot.token != token or (
            snapshot.collection != self.manifest.get_meta(META_COLLECTION)
        ):
            return None
        self._snapshot = snapshot
        return snapshot

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
        from indexing.dense_snapshot import DenseSnapshot, write

        try:
            ids = sorted(self.manifest.chunk_ids())
            previous = self._previous(path)
            if previous is not None and previous.collection != store.name:
                previous = None
            dimension = int(self.manifest.get_meta(META_DIMENSION) or 0)
            matrix = _unit_rows(ids, previous, store, dimension)
            if matrix is None:
                return  # Chroma lacks vectors (a repair is due): no snapshot until it has them
            token = write(path, store.name, ids, matrix)
            with self.manifest.transaction():
                self.manifest.set_meta(SNAPSHOT_META, token)
            # The next search reads this one instead of the file, and the stale copy goes now.
            self._snapshot = DenseSnapshot(token, store.name, ids, matrix)
        except Exception as exc:  # speed only: searches fall back to Chroma
            log.warning("could not write the dense snapshot %s: %s", path, exc)

    def _previous(self, path: Path) -> DenseSnapshot | None:
        """The snapshot now on disk, for its rows: the one this keeper holds when the file
        still is that one (only the file's token is read), else the file's own. In a
        long-running process (the TUI) loading it again held two n x d copies during a refresh
        and a third after it, until the next search."""
        if not path.exists():
            return None
        from indexing.dense_snapshot import load, stored_token

        cached = self._snapshot
        if cached is not None and stored_token(path) == cached.token:
            return cached
        self._snapshot = None  # stale: not kept beside the one read now
        return load(path)


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
