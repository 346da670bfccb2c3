"""One query embedding shared by concurrent retrieval and recall (assistant/shared_embedder.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from assistant.shared_embedder import SingleFlightContext, SingleFlightEmbedder
from tests.fakes import HashEmbedder
from tests.waiting import wait_until


class SlowEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.query_calls = 0
        self.started = threading.Event()
        self.release = threading.Event()

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        self.started.set()
        assert self.release.wait(5)
        if text == "boom":
            raise RuntimeError("model failed")
        return super().embed_query(text)


def test_concurrent_queries_for_the_same_text_embed_once() -> None:
    inner = SlowEmbedder()
    shared = SingleFlightEmbedder(inner)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(shared.embed_query, "how do I stash?")
        assert inner.started.wait(5)
        second = pool.submit(shared.embed_query, "how do I stash?")
        wait_until(lambda: shared.merged == 1)  # the second caller waits for the first
        inner.release.set()
        a, b = first.result(5), second.result(5)
    assert inner.query_calls == 1
    assert np.array_equal(a, b)
    # Not a cache: a later call asks the inner embedder (which has its own memo) again.
    shared.embed_query("how do I stash?")
    assert inner.query_calls == 2
    assert shared.model_id == inner.model_id and shared.dimension == inner.dimension


def test_a_failure_reaches_every_waiter() -> None:
    inner = SlowEmbedder()
    shared = SingleFlightEmbedder(inner)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(shared.embed_query, "boom")
        assert inner.started.wait(5)
        second = pool.submit(shared.embed_query, "boom")
        wait_until(lambda: shared.merged == 1)
        inner.release.set()
        for future in (first, second):
            with pytest.raises(RuntimeError, match="model failed"):
                future.result(5)


def test_the_stores_context_shares_one_wrapped_embedder(home) -> None:
    from assistant.context import AppContext

    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    chat_ctx = SingleFlightContext(ctx)
    assert chat_ctx.embedder() is chat_ctx.embedder()
    assert isinstance(chat_ctx.embedder(), SingleFlightEmbedder)
    assert chat_ctx.paths == ctx.paths and chat_ctx.config is ctx.config
