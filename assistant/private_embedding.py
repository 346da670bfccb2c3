"""The embedder as the personal stores use it: their texts never reach the on-disk cache.

Document chunks are cached by the hash of their text so nothing is embedded twice. Memories and
conversation turns are personal: a cached entry would outlive their erasure (and would confirm
a guessed memory or message by its hash). So the memory store and the conversation index embed
through `embed_private` when the app's embedder has it (`CachedEmbedder`): cache hits are still
served, misses are never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from indexing.embedder import Embedder


class PrivateEmbedder:
    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        private = getattr(self._inner, "embed_private", None)
        if private is not None:
            return np.asarray(private(texts))
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._inner.embed_query(text)
