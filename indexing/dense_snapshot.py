"""A file copy of the dense collection, so a cold `brain search` never imports Chroma.

Importing chromadb and opening its client cost 1-3 s of a cold search (more than loading the
embedding model); an exact dot product over the stored vectors takes milliseconds (7.8k tldr
chunks: ~1 ms; 100k: ~40 ms). So every sync that changed the chunks leaves, next to Chroma's
own files, `dense-<collection>.npz`: the chunk ids and their unit vectors, written atomically.

It is only trusted while it matches the index: the manifest holds its token (meta
`dense_snapshot`), written after the file and cleared in the same transaction as any change to
the chunks. A search that finds no token, another token in the file, or no file asks Chroma as
before; the next sync writes a new copy. The file lives inside the vector store's directory, so
moving a damaged store aside (the documented recovery) takes the copy with it. Chroma stays the
store of record: syncs, repairs, memories and server mode use it as before.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

META_KEY = "dense_snapshot"


def snapshot_file(vector_dir: Path, collection: str) -> Path:
    return vector_dir / f"dense-{collection}.npz"


@dataclass
class DenseSnapshot:
    token: str
    collection: str
    ids: list[str]
    matrix: np.ndarray  # n × d float32, unit rows
    _rows: dict[str, int] | None = field(default=None, repr=False)

    def row_of(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {chunk_id: row for row, chunk_id in enumerate(self.ids)}
        return self._rows

    def search(self, query: np.ndarray, k: int, *, allowed: Collection[str] | None = None
               ) -> list[tuple[str, float]]:
        """The `k` nearest ids by cosine similarity (exact), best first, as Chroma answers."""
        if k <= 0 or not self.ids:
            return []
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        if norm == 0 or vector.shape[0] != self.matrix.shape[1]:
            return []
        with one_blas_thread():
            scores = self.matrix @ (vector / norm)
        if allowed is not None:
            rows = self.row_of()
            keep = np.fromiter((rows[i] for i in allowed if i in rows), dtype=np.int64)
            if keep.size == 0:
                return []
            picked = scores[keep]
            order = keep[_top(picked, k)]
        else:
            order = _top(scores, k)
        return [(self.ids[row], float(scores[row])) for row in order]


@functools.cache
def _blas_controller() -> ThreadpoolController:
    # Inspecting the loaded libraries costs ~2 ms: once per process, not per search.
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS's second thread for this one product: it spins after a matrix-vector product
    and takes the other core from the model and the keyword search running beside it (issue 25:
    16 ms with the default threads vs 0.3-1.3 ms with one). Limited here, not process-wide:
    session and memory search are 1.3-1.5x slower with one thread."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    if k < scores.shape[0]:
        part = np.argpartition(-scores, k - 1)[:k]
        return part[np.argsort(-scores[part], kind="stable")]
    return np.argsort(-scores, kind="stable")


def load(path: Path) -> DenseSnapshot | None:
    """The snapshot in `path`, or None if there is none or it cannot be read."""
    try:
        with np.load(path, allow_pickle=False) as data:
            token = str(data["token"][()])
            collection = str(data["collection"][()])
            ids = [str(i) for i in data["ids"]]
            matrix = np.ascontiguousarray(data["vectors"], dtype=np.float32)
    except (OSError, ValueError, KeyError):
        return None
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        return None
    return DenseSnapshot(token, collection, ids, matrix)


def stored_token(path: Path) -> str | None:
    """The token of the snapshot in `path` without reading its vectors (npz members load
    lazily), or None if it cannot be read."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return str(data["token"][()])
    except (OSError, ValueError, KeyError):
        return None


def write(path: Path, collection: str, ids: list[str], matrix: np.ndarray) -> str:
    """Write a snapshot atomically (temp file + rename); returns its new token."""
    token = uuid.uuid4().hex
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(
                out,
                token=np.array(token),
                collection=np.array(collection),
                ids=np.array(ids, dtype=str) if ids else np.zeros((0,), dtype="<U1"),
                vectors=np.asarray(matrix, dtype=np.float32),
            )
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return token
