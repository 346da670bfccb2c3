"""The chat over the composition root (issue 24 item 6): a `Services`-built chat works over the
Services' own stores, so each store is opened once per process, whoever uses it.

The real core (SQLite, Chroma, the memory store) with the fast HashEmbedder and the fake
Ollama server.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from assistant.chat.events import Done
from assistant.context import AppContext
from assistant.services import Services
from assistant.shared_embedder import SingleFlightEmbedder
from tests.fake_ollama import FakeOllamaServer
from tests.fakes import HashEmbedder
from tests.waiting import wait_until

PATIENCE = 30.0  # seconds the turn's background work may take on a loaded machine

# A turn with knowledge, memory and the recall of earlier conversations opens each once.
AFTER_A_TURN = Counter({"chat": 1, "sessions": 1, "retriever": 1, "retrieval_log": 1,
                        "memory": 1, "memory_service": 1, "conversations": 1})


def _services(home: Path) -> Services:
    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    return Services(ctx, origin="tui")


async def test_a_chat_turn_opens_each_store_once_and_shares_it(
        ollama_home: Path, fake_ollama: FakeOllamaServer) -> None:
    services = _services(ollama_home)
    try:
        chat = services.chat()
        assert chat.engine.store is services.sessions()
        fake_ollama.script_chat("Use tar -xzf.")
        final = await chat.engine.ask("how do I extract a tar file?")
        assert isinstance(final, Done) and final.turn is not None
        await chat.engine.drain(timeout=PATIENCE)
        # The UI's stores and the chat's are the same objects: one of each per process.
        assert chat.knowledge is not None and chat.memory is not None
        assert chat.knowledge.retriever() is services.retriever()
        assert chat.memory.service() is services.memory_service()
        assert services.memory_service().store is services.memory()
        assert services.conversations().store is services.sessions()
        assert services.opened == AFTER_A_TURN
        # The turn the chat stored is in the one session store the rest of the UI reads.
        assert [t.answer for t in services.sessions().turns(final.turn.session_id)] == [
            "Use tar -xzf."]
        await chat.aclose()
        # Closing the chat leaves the stores open for the rest of the process.
        assert services.sessions().latest() is not None
        assert services.opened == AFTER_A_TURN
    finally:
        services.close()


class GatedEmbedder(HashEmbedder):
    """Holds the first query embedding until released, counting the calls that reach it."""

    def __init__(self) -> None:
        super().__init__()
        self.query_calls = 0
        self.started = threading.Event()
        self.release = threading.Event()

    def embed_query(self, text: str) -> np.ndarray:
        self.query_calls += 1
        self.started.set()
        assert self.release.wait(PATIENCE)
        return super().embed_query(text)


def test_the_stores_embed_one_question_once(ollama_home: Path) -> None:
    """Knowledge, memory and the conversation index embed a turn's question at once: through
    the one single-flight embedder, the model runs once."""
    ctx = AppContext.load(str(ollama_home))
    inner = ctx._embedder = GatedEmbedder()
    services = Services(ctx, origin="tui")
    try:
        retriever = services.retriever()
        embedders = [retriever.embedder, services.memory().embedder(),
                     services.conversations().embedder()]
        shared = retriever.embedder
        assert isinstance(shared, SingleFlightEmbedder)
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(embedders[0].embed_query, "how do I extract a tar file?")
            assert inner.started.wait(PATIENCE)
            rest = [pool.submit(e.embed_query, "how do I extract a tar file?")
                    for e in embedders[1:]]
            wait_until(lambda: shared.merged == 2)
            inner.release.set()
            vectors = [f.result(PATIENCE) for f in (first, *rest)]
        assert inner.query_calls == 1
        assert all(np.array_equal(vectors[0], v) for v in vectors[1:])
    finally:
        services.close()


async def test_ask_s_own_chat_shares_the_stores_and_leaves_them_to_close(
        ollama_home: Path, fake_ollama: FakeOllamaServer) -> None:
    services = _services(ollama_home)
    try:
        first = services.open_chat(knowledge=False, memory=False)
        fake_ollama.script_chat("first")
        done = await first.engine.ask("one")
        assert isinstance(done, Done) and done.turn is not None
        await first.aclose()
        second = services.open_chat(session_id=done.turn.session_id, knowledge=False,
                                    memory=False)
        assert second.engine.store is first.engine.store is services.sessions()
        assert second.engine.session is not None
        assert second.engine.session.id == done.turn.session_id
        await second.aclose()
        assert services.opened == Counter({"chat_separate": 2, "sessions": 1})
    finally:
        services.close()
