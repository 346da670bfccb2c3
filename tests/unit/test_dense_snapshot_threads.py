"""The dense search's matrix-vector product runs on one BLAS thread, and only that product:
OpenBLAS's second thread spins after it and takes the other core from the model and the keyword
search (issue 25), while other products keep the process's setting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from indexing.dense_snapshot import DenseSnapshot


def blas_threads() -> list[int]:
    """The thread counts of numpy's own BLAS, the one the product runs on. Not every BLAS in
    the process: another package's (scipy's, loaded by an earlier test in the same worker after
    the product's controller was made) is neither used by the product nor limited by it, and
    counting it made this test depend on which tests ran before it."""
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    # numpy's wheel ships its BLAS in numpy.libs/; a numpy built on the system's BLAS has one.
    own = [lib for lib in blas if Path(lib["filepath"]).parent.name == "numpy.libs"] or blas
    return [lib["num_threads"] for lib in own]


class Probe(np.ndarray):
    """A matrix that notes the BLAS thread counts in force when it is multiplied."""

    seen: list[list[int]]

    def __matmul__(self, other: Any) -> Any:
        Probe.seen.append(blas_threads())
        return np.asarray(self) @ other


def test_the_dense_product_runs_on_one_blas_thread_and_the_setting_comes_back() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((64, 8)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    snapshot = DenseSnapshot("t", "c", [f"id{i}" for i in range(64)], matrix.view(Probe))
    Probe.seen = []
    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() and set(blas_threads()) == {2}
        hits = snapshot.search(matrix[5], 3)
        assert set(blas_threads()) == {2}
    assert Probe.seen == [[1] * len(blas_threads())]
    assert hits[0][0] == "id5" and len(hits) == 3
