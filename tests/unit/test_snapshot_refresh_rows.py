"""The dense snapshot's rows are gathered into one preallocated matrix, Chroma read a batch at
a time (issue 25: a 98k-chunk cold index peaked at 1 GB while stacking every vector at once)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from indexing import knowledge_snapshot
from indexing.dense_snapshot import DenseSnapshot
from indexing.knowledge_snapshot import _unit_rows


class _Store:
    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.asked: list[int] = []

    def get_embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        self.asked.append(len(ids))
        return {i: self.vectors[i] for i in ids if i in self.vectors}


def _vectors(ids: list[str], dimension: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i: rng.standard_normal(dimension).astype(np.float32) * 3 for i in ids}


def test_rows_come_from_the_previous_snapshot_and_chroma_in_batches(monkeypatch) -> None:
    monkeypatch.setattr(knowledge_snapshot, "_FETCH_BATCH", 100)
    ids = [f"c{n:05d}" for n in range(1000)]
    kept = ids[::3]
    old = _vectors(kept, 8, seed=1)
    old_matrix = np.stack([v / np.linalg.norm(v) for v in old.values()])
    previous = DenseSnapshot("t", "col", list(old), old_matrix)
    store = _Store(_vectors([i for i in ids if i not in old], 8, seed=2))

    matrix = _unit_rows(ids, previous, store, 8)

    assert matrix is not None and matrix.shape == (1000, 8) and matrix.dtype == np.float32
    assert max(store.asked) == 100 and sum(store.asked) == 1000 - len(kept)
    for row, chunk_id in enumerate(ids):
        source = old[chunk_id] if chunk_id in old else store.vectors[chunk_id]
        assert np.allclose(matrix[row], source / np.linalg.norm(source), atol=1e-6)


def test_a_vector_chroma_lacks_means_no_snapshot() -> None:
    ids = ["a", "b", "c"]
    store = _Store(_vectors(["a", "c"], 4, seed=3))
    assert _unit_rows(ids, None, store, 4) is None


def test_rows_of_another_dimension_are_not_copied() -> None:
    ids = ["a", "b"]
    previous = DenseSnapshot("t", "col", ["a"], np.ones((1, 3), dtype=np.float32))
    store = _Store(_vectors(ids, 4, seed=4))
    matrix = _unit_rows(ids, previous, store, 4)
    assert matrix is not None and matrix.shape == (2, 4)
    assert store.asked == [2]


def test_an_empty_index_gives_an_empty_matrix() -> None:
    matrix = _unit_rows([], None, _Store({}), 5)
    assert matrix is not None and matrix.shape == (0, 5)
