"""A file copy of the dense collection, so a cold `brain search` never imports Chroma.

Importing chromadb and opening its client cost 1-3 s of a cold search (more than loading the
embedding model); an exact dot product over the stored vectors takes milliseconds (7.8k tldr
chunks: ~1 ms; 100k: ~40 ms). So every sync that changed the chunks leaves, next to Chroma's
own files, `dense-<collection>.npz`: the chunk ids and their unit vectors (float16), written
atomically.

It is only trusted while it matches the index: the manifest holds its token (meta
`dense_snapshot`), written after the file and cleared in the same transaction as any change to
the chunks. A search that finds no token, another token in the file, or no file asks Chroma as
before; the next sync writes a new copy. The file lives inside the vector store's directory, so
moving a damaged store aside (the documented recovery) takes the copy with it. Chroma stays the
store of record: syncs, repairs, memories and server mode use it as before.

Each row also keeps its text's content hash, so the file doubles as the model's vectors by
content (`by_content`): a sync takes a moved or re-chunked text's vector from here, and the
embedding cache need not hold a third copy of every knowledge vector (issue 25). Whatever its
token, a file of the current collection is right by content: a text's vector under one model
never changes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import uuid
import zipfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

META_KEY = "dense_snapshot"
# The vectors' type in the file: float16 halves it (24 of 48 MB at 32k chunks). A score moves by
# at most ~5e-5 (32k rows: 200 queries kept their top-10 sets, 2 swapped a near tie), and a norm
# by ~3e-5, so rows are not normalised again. Searched in float32: a query costs what it did.
_STORED = np.float16


def snapshot_file(vector_dir: Path, collection: str) -> Path:
    return vector_dir / f"dense-{collection}.npz"


@dataclass
class DenseSnapshot:
    token: str
    collection: str
    ids: list[str]
    matrix: np.ndarray  # n × d float32, unit rows
    # Row i's content hash as 32 raw bytes (n × 32 uint8); None in a file from before them.
    hashes: np.ndarray | None = None
    _rows: dict[str, int] | None = field(default=None, repr=False)
    _by_hash: dict[bytes, int] | None = field(default=None, repr=False)

    def row_of(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {chunk_id: row for row, chunk_id in enumerate(self.ids)}
        return self._rows

    def by_content(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors held for these content hashes (sha256 hex), those it has."""
        if self.hashes is None:
            return {}
        if self._by_hash is None:
            self._by_hash = {bytes(h): row for row, h in enumerate(self.hashes)}
        found: dict[str, np.ndarray] = {}
        for key in keys:
            try:
                row = self._by_hash.get(bytes.fromhex(key))
            except ValueError:
                continue
            if row is not None:
                found[key] = self.matrix[row]
        return found

    def content_keys(self) -> set[str]:
        """The content hashes (hex) of its rows; empty in a file from before them."""
        return set() if self.hashes is None else {bytes(h).hex() for h in self.hashes}

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
            raw_ids = data["ids"]
            ids = ([bytes(i).decode("ascii") for i in raw_ids] if raw_ids.dtype.kind == "S"
                   else [str(i) for i in raw_ids])
            matrix = _read_vectors(data)
            hashes = np.asarray(data["hashes"], dtype=np.uint8) if "hashes" in data else None
    except (OSError, ValueError, KeyError, UnicodeDecodeError, zipfile.BadZipFile):
        return None
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        return None
    if hashes is not None and hashes.shape != (len(ids), 32):
        hashes = None
    return DenseSnapshot(token, collection, ids, matrix, hashes)


def write(path: Path, collection: str, ids: list[str], matrix: np.ndarray,
          hashes: Sequence[str], *, token: str | None = None) -> DenseSnapshot:
    """Write a snapshot atomically (temp file + rename); returns it as `load` would read it,
    with its token (a new one unless given). `hashes`: each row's content hash (sha256 hex).
    A float32 `matrix` is rounded in place to the file's values and becomes the returned
    snapshot's (no second n x d copy at the peak of a sync)."""
    token = token or uuid.uuid4().hex
    ascii_ids = all(i.isascii() for i in ids)
    raw_hashes = (np.frombuffer(b"".join(bytes.fromhex(h) for h in hashes),
                                dtype=np.uint8).reshape(len(ids), 32)
                  if ids else np.zeros((0, 32), dtype=np.uint8))
    stored = np.asarray(matrix, dtype=_STORED)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(
                out,
                token=np.array(token),
                collection=np.array(collection),
                # Chunk ids are hex: one byte a character instead of numpy's four.
                ids=(np.array([i.encode("ascii") for i in ids], dtype=bytes) if ids and ascii_ids
                     else np.array(ids, dtype=str) if ids else np.zeros((0,), dtype="S1")),
                vectors=stored,
                hashes=raw_hashes,
            )
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if isinstance(matrix, np.ndarray) and matrix.dtype == np.float32 and matrix.flags.writeable:
        matrix[...] = stored
        searched = np.ascontiguousarray(matrix)
    else:
        searched = _as_searched(stored)
    return DenseSnapshot(token, collection, list(ids), searched, raw_hashes)


# Rows converted at a time when reading float16 vectors: the file's array is never whole in
# memory beside the float32 one (a cold search's peak: +24 MB at 32k chunks otherwise).
_READ_ROWS = 4096


def _read_vectors(data: np.lib.npyio.NpzFile) -> np.ndarray:
    """The file's vectors as float32, read a block of rows at a time from the archive."""
    if data.zip is None:
        return _as_searched(data["vectors"])
    with data.zip.open("vectors.npy") as member:
        version = np.lib.format.read_magic(member)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(member) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(member))
        if dtype == np.float32 or fortran or len(shape) != 2:
            return _as_searched(data["vectors"])
        rows, width = shape
        matrix = np.empty((rows, width), dtype=np.float32)
        for start in range(0, rows, _READ_ROWS):
            count = min(_READ_ROWS, rows - start)
            raw = member.read(count * width * dtype.itemsize)
            matrix[start:start + count] = np.frombuffer(raw, dtype=dtype).reshape(count, width)
        return matrix


def _as_searched(stored: np.ndarray) -> np.ndarray:
    """The file's rows as a search reads them (float32: BLAS has no float16 product)."""
    return np.ascontiguousarray(stored, dtype=np.float32)


def erase_content(vector_dir: Path, keys: Collection[str]) -> int:
    """Drop the rows of these content hashes (texts no chunk has any more: a removed folder)
    from every snapshot file in `vector_dir`, other models' included (they stay for a switch
    back), so none confirms a removed text by its hash or keeps its vector. Each file keeps its
    token (a row no chunk has was never searched) and is replaced atomically, so a kill leaves
    it old or new; the erasure runs again until done. Returns the rows dropped."""
    wanted = {bytes.fromhex(k) for k in keys if len(k) == 64}
    dropped = 0
    for path in sorted(vector_dir.glob("dense-*.npz")) if wanted else ():
        snapshot = load(path)
        if snapshot is None or snapshot.hashes is None:
            continue
        keep = [row for row, h in enumerate(snapshot.hashes) if bytes(h) not in wanted]
        if len(keep) == len(snapshot.ids):
            continue
        write(path, snapshot.collection, [snapshot.ids[row] for row in keep],
              snapshot.matrix[keep], [bytes(snapshot.hashes[row]).hex() for row in keep],
              token=snapshot.token)
        dropped += len(snapshot.ids) - len(keep)
    return dropped
