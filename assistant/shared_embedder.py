"""One query embedding for concurrent searches of the same text (`SingleFlightEmbedder`).

A chat turn searches knowledge, memories and earlier conversations at once, each on its own
thread, all with the user's question: `Services` opens every store over one
`SingleFlightContext`, so the model embeds that question once per turn.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from assistant.context import AppContext
from indexing.lazy import Lazy

if TYPE_CHECKING:
    import numpy as np

    from indexing.embedder import Embedder


class SingleFlightEmbedder:
    """The app's embedder, with concurrent `embed_query` calls for the same text merged.

    Knowledge retrieval and memory recall run at the same time and usually embed the same
    question: without this, both miss the embedder's query memo and the model runs twice, one
    after the other (it is not re-entrant) — a second embedding on every turn's critical path.
    """

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._inflight: dict[str, Future[np.ndarray]] = {}
        self.merged = 0  # calls served by another caller's embedding

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._inner.embed_documents(texts)

    def __getattr__(self, name: str) -> Any:
        # Beyond the Embedder protocol: the cache's counters and `cached(text)`, for benches.
        return getattr(self._inner, name)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            pending = self._inflight.get(text)
            if pending is None:
                pending = self._inflight[text] = Future()
                owner = True
            else:
                owner = False
                self.merged += 1
        if not owner:
            return pending.result()
        try:
            vector = self._inner.embed_query(text)
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        finally:
            with self._lock:
                self._inflight.pop(text, None)
        pending.set_result(vector)
        return vector


class SingleFlightContext(AppContext):
    """`ctx` as the stores of `Services` see it: the same paths, config and embedding model,
    the latter behind a SingleFlightEmbedder (loaded on first use)."""

    def __init__(self, ctx: AppContext) -> None:
        super().__init__(paths=ctx.paths, config=ctx.config, read_only=ctx.read_only)
        self._shared = Lazy(lambda: SingleFlightEmbedder(ctx.embedder()))

    def embedder(self) -> Embedder:
        return self._shared.get()
