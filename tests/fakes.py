"""Fast stand-ins for expensive collaborators, for unit tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic bag-of-words embedder: texts sharing words get similar vectors.

    Satisfies the `indexing.embedder.Embedder` protocol without loading a model, so unit tests of
    retrieval and memory logic run in milliseconds. Counts its calls so tests can check caching.
    """

    def __init__(self, dimension: int = 64, model_id: str = "test:hash-64") -> None:
        self.dimension = dimension
        self.model_id = model_id
        self.calls = 0
        self.texts_embedded = 0

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self.dimension
            sign = 1.0 if digest[4] & 1 else -1.0
            vec[slot] += sign
        norm = float(np.linalg.norm(vec))
        if norm == 0:
            vec[0] = 1.0
            norm = 1.0
        return vec / norm

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)
