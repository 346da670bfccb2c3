"""Writing the dense snapshot costs one n x d matrix, not several (issue 25: at the end of a cold
100k-chunk index the refresh took the process from 550 to 1,048 MB), and a long-running process
keeps one copy of it, not the stale one beside a second read of the file."""

from __future__ import annotations

import contextlib
import hashlib
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from indexing import dense_snapshot, knowledge_snapshot
from indexing.dense_snapshot import load
from indexing.knowledge_snapshot import SnapshotKeeper
from indexing.knowledge_types import META_COLLECTION, META_DIMENSION
from indexing.manifest import SNAPSHOT_META, Manifest

DIMENSION = 384


class FakeManifest:
    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        self.meta = {META_COLLECTION: "docs", META_DIMENSION: str(DIMENSION)}

    def get_meta(self, key: str) -> str | None:
        return self.meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self.meta[key] = value

    def chunk_ids(self) -> set[str]:
        return set(self.ids)

    def chunk_hashes(self) -> dict[str, str]:
        return {i: hashlib.sha256(i.encode()).hexdigest() for i in self.ids}

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        yield


class FakeStore:
    """Chroma's collection as the refresh sees it: vectors by id, counted per call."""

    name = "docs"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        self.calls.append(len(ids))
        return {i: vector(i) for i in ids}


def vector(chunk_id: str) -> np.ndarray:
    out = np.zeros(DIMENSION, dtype=np.float32)
    number = int(chunk_id[1:])
    out[number % DIMENSION] = 2.0  # not unit: the snapshot must normalise it
    out[(number * 7 + 1) % DIMENSION] += 1.0
    return out


def keeper(tmp_path: Path, ids: list[str]) -> tuple[SnapshotKeeper, FakeManifest]:
    manifest = FakeManifest(ids)
    return SnapshotKeeper(cast(Manifest, manifest), tmp_path), manifest


def test_a_refresh_holds_one_matrix_and_reads_chroma_in_bounded_batches(tmp_path: Path) -> None:
    ids = [f"c{i:06d}" for i in range(40_000)]
    snapshots, manifest = keeper(tmp_path, ids)
    store = FakeStore()
    tracemalloc.start()
    try:
        snapshots.refresh(lambda: cast(Any, store))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    matrix_bytes = len(ids) * DIMENSION * 4
    # One matrix (61 MB) plus batch-sized working sets; all vectors at once, then a stacked
    # copy and a normalised copy, were more than three matrices.
    assert peak < 2 * matrix_bytes, f"peak {peak / 1e6:.0f} MB, matrix {matrix_bytes / 1e6:.0f} MB"
    assert store.calls and max(store.calls) <= knowledge_snapshot._FETCH_BATCH
    written = load(tmp_path / "dense-docs.npz")
    assert written is not None and written.token == manifest.get_meta(SNAPSHOT_META)
    assert written.ids == sorted(ids)
    for row in (0, 12_345, len(ids) - 1):
        expected = vector(written.ids[row])
        # Stored as float16: a unit row's components are within 2**-11 of the exact ones.
        np.testing.assert_allclose(written.matrix[row], expected / np.linalg.norm(expected),
                                   atol=6e-4)


def test_a_refresh_reads_only_the_new_chunks_and_the_next_search_needs_no_file_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "chroma.sqlite3").write_bytes(b"")  # Chroma's own check is not under test
    monkeypatch.setattr(knowledge_snapshot, "_looks_like_chroma", lambda directory: True)
    ids = [f"c{i:06d}" for i in range(5000)]
    snapshots, manifest = keeper(tmp_path, ids)
    snapshots.refresh(lambda: cast(Any, FakeStore()))
    manifest.ids = [*ids[100:], "c900000", "c900001"]  # 100 removed, 2 added
    del manifest.meta[SNAPSHOT_META]
    store = FakeStore()
    snapshots.refresh(lambda: cast(Any, store))
    assert store.calls == [2]
    monkeypatch.setattr(dense_snapshot, "load", lambda path: pytest.fail("file read again"))
    fresh = snapshots.fresh()
    assert fresh is not None and fresh.ids == sorted(manifest.ids)
    assert fresh.token == manifest.get_meta(SNAPSHOT_META)
    monkeypatch.undo()
    on_disk = load(tmp_path / "dense-docs.npz")
    assert on_disk is not None
    np.testing.assert_array_equal(fresh.matrix, on_disk.matrix)
