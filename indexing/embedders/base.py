"""What every concrete embedding model provides to `CachedEmbedder`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from indexing.errors import HintedError


class EmbeddingModelError(HintedError):
    """The embedding model cannot be loaded or reached; the message is meant for the user."""


class InnerModel(Protocol):
    """A raw model: no cache, may load lazily, may return unnormalised vectors."""

    model_id: str

    def known_dimension(self) -> int | None:
        """The output dimension if it is known without embedding anything."""
        ...

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray: ...


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """float32, each row scaled to unit length (all-zero rows stay zero instead of NaN)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)
