"""Embeddings from an OpenAI-compatible server (POST /v1/embeddings), e.g. `openai:bge-m3`.

`indexing/` never imports `assistant/`, so the HTTP call itself is handed in (`embed(model,
texts)`, assistant/llm/provider.openai_embed: the one client for such a server); this class
adds what every embedder here owes its callers: a float32 matrix, a fixed dimension, and
failures as `EmbeddingModelError`s that say what to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from indexing.embedders.base import EmbeddingModelError
from indexing.errors import log_failure

log = logging.getLogger(__name__)

RemoteEmbed = Callable[[str, Sequence[str]], list[list[float]]]


class RemoteModel:
    def __init__(self, model: str, *, embed: RemoteEmbed | None, batch_size: int) -> None:
        self.model = model.strip()
        if not self.model:
            raise EmbeddingModelError(
                "Embedding model `openai:` needs a model name.",
                hint="e.g. `openai:nomic-embed-text` (an id from the server's /v1/models)")
        if embed is None:
            raise EmbeddingModelError(
                f"`openai:{self.model}` needs an OpenAI-compatible server.",
                hint='set [llm] provider = "openai" and base_url, or embedding.model = "bundled"')
        self.model_id = f"openai:{self.model}"
        self._embed = embed
        self._batch_size = batch_size
        self._dimension: int | None = None

    def known_dimension(self) -> int | None:
        return self._dimension

    def _post(self, texts: list[str]) -> np.ndarray:
        try:
            vectors = self._embed(self.model, texts)
        except Exception as exc:  # the handed-in call may raise anything: said as one error
            log_failure(log, f"embedding with {self.model_id} failed", exc, level=logging.INFO)
            hint = getattr(exc, "hint", None)
            message = exc.args[0] if exc.args else str(exc)
            raise EmbeddingModelError(
                f"Cannot embed with {self.model_id}: {message}",
                hint=hint or "check [llm] base_url and that the server serves this model",
            ) from exc
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts) or matrix.shape[1] == 0:
            raise EmbeddingModelError(
                f"The server sent an unexpected /v1/embeddings answer for {self.model_id}.",
                hint="check that the model is an embedding model")
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise EmbeddingModelError(
                f"{self.model_id} changed from {self._dimension}-d to {matrix.shape[1]}-d "
                "vectors while running.", hint="run `brain index --rebuild` after changing models")
        self._dimension = int(matrix.shape[1])
        return matrix

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        parts = [self._post(list(texts[start:start + self._batch_size]))
                 for start in range(0, len(texts), self._batch_size)]
        if not parts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return np.concatenate(parts)

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._post([text])[0]
        return vector
