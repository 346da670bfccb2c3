"""Optional rerank stage: a cross-encoder reads (query, chunk) pairs and rescores the top of
the fused list. Off by default — no cross-encoder ships offline — and enabled by setting
retrieval.reranker to a local model path or a Hugging Face name already in the local cache.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, Protocol

from assistant.errors import UserError
from indexing.errors import log_failure
from indexing.lazy import Lazy

log = logging.getLogger(__name__)


class Reranker(Protocol):
    """Scores each text's relevance to the query in [0, 1], higher is better."""

    name: str

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder, loaded on first use, strictly from local files."""

    def __init__(self, model: str, *, device: str = "cpu", batch_size: int = 32) -> None:
        self.name = model
        self._device = device
        self._batch_size = batch_size
        self._model: Lazy[Any] = Lazy(self._open)

    def _load(self) -> Any:
        return self._model.get()

    def _open(self) -> Any:
        try:
            from sentence_transformers import CrossEncoder

            return CrossEncoder(self.name, device=self._device, local_files_only=True)
        except Exception as exc:  # not cached, not a cross-encoder, …: the setting to fix
            log_failure(log, f"cannot load the reranker {self.name!r}", exc, level=logging.INFO,
                        foreseen=(OSError, ValueError))
            raise UserError(
                f"cannot load the reranker {self.name!r}: {exc}",
                hint="set retrieval.reranker to a local cross-encoder folder or a model "
                "already in the Hugging Face cache, or to \"\" to turn reranking off",
            ) from exc

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        model = self._load()
        raw = model.predict(
            [(query, t) for t in texts], batch_size=self._batch_size, show_progress_bar=False
        )
        values = [float(v) for v in (raw.tolist() if hasattr(raw, "tolist") else raw)]
        # Most cross-encoders emit logits; a few already emit probabilities.
        if all(0.0 <= v <= 1.0 for v in values):
            return values
        return [_sigmoid(v) for v in values]


def make_reranker(spec: str, *, device: str = "cpu") -> Reranker | None:
    """The configured reranker, or None when reranking is off (empty spec)."""
    spec = spec.strip()
    if not spec:
        return None
    return CrossEncoderReranker(spec, device=device)
