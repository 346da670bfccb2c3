"""Embeddings from a local Ollama server (POST /api/embed), e.g. `ollama:bge-m3`.

The request is the wire layer's (`indexing/ollama_http.embed`: the host's URL shape, the
timeouts, no proxy, the reply's checks), the one the app's `OllamaClient.embed` makes too;
`indexing/` never imports `assistant/`, so this module words the failures itself, as
`EmbeddingModelError`s that say what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from indexing import ollama_http as wire
from indexing.embedders.base import EmbeddingModelError
from indexing.lazy import Lazy


def ollama_model_name(name: str) -> str:
    """Ollama's own resolution: `bge-m3` and `bge-m3:latest` are one model (one cache)."""
    name = name.strip()
    if name.endswith(":latest"):
        name = name[: -len(":latest")]
    return name


class OllamaModel:
    """One embedding model served by Ollama; the dimension is learnt from its first answer."""

    def __init__(self, model: str, *, host: str | None, timeout: float, batch_size: int) -> None:
        self.model = ollama_model_name(model)
        if not self.model:
            raise EmbeddingModelError(
                "Embedding model `ollama:` needs a model name.", hint="e.g. `ollama:bge-m3`"
            )
        self.model_id = f"ollama:{self.model}"
        self._host = wire.normalize_host(host)
        self._timeout = timeout
        self._batch_size = batch_size
        self._dimension: int | None = None
        self._client: Lazy[Any] = Lazy(self._open_http)

    def known_dimension(self) -> int | None:
        return self._dimension

    def _http(self) -> Any:
        return self._client.get()

    def _open_http(self) -> Any:
        return wire.sync_client(self._host, self._timeout)

    def _post(self, texts: list[str]) -> np.ndarray:
        import httpx

        try:
            vectors = wire.embed(self._http(), self.model, texts, batch=len(texts) or 1)
        except httpx.TimeoutException as exc:
            raise EmbeddingModelError(
                f"Ollama at {self._host} did not answer within {self._timeout:g} s while "
                f"embedding with {self.model!r}.",
                hint="raise ollama.timeout in the config, or check the server's load",
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbeddingModelError(
                f"Cannot reach Ollama at {self._host} to embed with {self.model!r} ({exc}).",
                hint='start it with `ollama serve`, or set embedding.model = "bundled"',
            ) from exc
        except wire.StatusError as exc:
            detail = exc.error or f"HTTP {exc.status}"
            if exc.status == 404 and "not found" in detail:
                raise EmbeddingModelError(
                    f"Ollama has no model {self.model!r}.",
                    hint=f"run `ollama pull {self.model}`",
                ) from exc
            raise EmbeddingModelError(
                f"Ollama could not embed with {self.model!r}: {detail}",
                hint="check that it is an embedding model (`ollama show "
                f"{self.model}` lists the `embedding` capability)",
            ) from exc
        except wire.MalformedReply as exc:
            raise EmbeddingModelError(
                f"Ollama at {self._host} sent an unexpected /api/embed answer for {self.model!r}.",
                hint="update Ollama (embeddings need version 0.3 or later)",
            ) from exc
        matrix = np.asarray(vectors, dtype=np.float32)
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise EmbeddingModelError(
                f"Ollama's {self.model!r} changed from {self._dimension}-d to "
                f"{matrix.shape[1]}-d vectors while running.",
                hint="run `brain index --rebuild` after changing models",
            )
        self._dimension = int(matrix.shape[1])
        return matrix

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        parts = [
            self._post(list(texts[start : start + self._batch_size]))
            for start in range(0, len(texts), self._batch_size)
        ]
        if not parts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return np.concatenate(parts)

    def encode_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._post([text])[0]
        return vector
