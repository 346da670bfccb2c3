"""Erasure works in the caller's stores (issue 24 item 6): a removal, its trace erasers and a
start-up replay of an interrupted one use the process's `Services` and construct no store of
their own. Over the real SQLite stores with in-memory vectors and the HashEmbedder."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.context import AppContext
from assistant.erasure import intents
from assistant.erasure.actions import (
    delete_session,
    finish_pending,
    forget_all_memories,
    forget_all_sessions,
    purge_memory,
)
from assistant.memory.model import NewMemory
from assistant.memory.store import MemoryStore
from assistant.retrieval.hit import RetrievalResult
from assistant.retrieval.log import RetrievalLog
from assistant.services import Services
from assistant.sessions.store import SessionStore
from tests.fakes import HashEmbedder
from tests.fixtures.conversations import ConversationVectors
from tests.fixtures.memory import MemoryVectors


class Killed(Exception):
    """The removal's process died after recording its intent."""


@pytest.fixture
def ctx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppContext:
    ctx = AppContext.load(str(tmp_path / "home"))
    ctx._embedder = HashEmbedder(dimension=64)
    memory_vectors, conversation_vectors = MemoryVectors(), ConversationVectors()
    monkeypatch.setattr("assistant.memory.service.chroma_vectors", lambda ctx: memory_vectors)
    monkeypatch.setattr("assistant.conversations.service.conversation_vectors",
                        lambda ctx: conversation_vectors)
    ctx.paths.vectors_dir.mkdir(parents=True, exist_ok=True)  # a vector store exists
    return ctx


@pytest.fixture
def constructed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many of each store were constructed (whoever opened them)."""
    counts: Counter[str] = Counter()
    for cls in (SessionStore, MemoryStore, RetrievalLog):
        init = cls.__init__

        def counted(self: Any, *args: Any, _init: Any = init, _name: str = cls.__name__,
                    **kwargs: Any) -> None:
            counts[_name] += 1
            _init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counted)
    yield counts


def _logged_session(core: Services, question: str) -> str:
    log_id = core.retrieval_log().append(RetrievalResult(question, [], False, {}))
    store = core.sessions()
    session = store.create(title=question)
    store.add_turn(session.id, question, "an answer", status="complete", log_id=log_id)
    return session.id


def test_every_removal_erases_in_the_callers_stores(
        ctx: AppContext, constructed: Counter[str]) -> None:
    with Services(ctx) as core:
        memory = core.memory()
        lyon = memory.add(NewMemory("I live in Lyon"), sync=False)
        memory.add(NewMemory("I kayak on Saturdays"), sync=False)
        first = _logged_session(core, "where do I live?")
        _logged_session(core, "when do I kayak?")
        assert purge_memory(core, lyon.id) == lyon.id
        assert forget_all_memories(core) == 1
        delete_session(core, first)
        assert forget_all_sessions(core) == 1
        assert memory.count(None) == 0
        assert core.sessions().list() == []
        assert core.retrieval_log().count() == 0  # the sessions' searches went with them
        assert constructed == Counter({"SessionStore": 1, "MemoryStore": 1, "RetrievalLog": 1})
        assert not intents.pending(ctx.paths.data_dir)


def test_an_interrupted_removal_is_finished_in_the_callers_stores(
        ctx: AppContext, constructed: Counter[str]) -> None:
    with Services(ctx) as core:
        memory = core.memory().add(NewMemory("I live in Lyon"), sync=False)
        session = _logged_session(core, "where do I live?")
        log_ids = sorted(core.sessions().log_ids(session))
        for intent in (intents.Intent("memory", "memory", {"id": memory.id,
                                                           "texts": [memory.text]}),
                       intents.Intent("sessions", "session", {"ids": [session],
                                                              "log_ids": log_ids})):
            with pytest.raises(Killed), intents.recorded(ctx.paths.data_dir, intent):
                raise Killed
    assert len(intents.pending(ctx.paths.data_dir)) == 2
    constructed.clear()
    with Services(ctx) as core:
        assert [i.kind for i in finish_pending(core)] == ["memory", "sessions"]
        assert core.memory().count(None) == 0
        assert core.sessions().list() == []
        assert core.retrieval_log().count() == 0
        assert constructed == Counter({"SessionStore": 1, "MemoryStore": 1, "RetrievalLog": 1})
    assert not intents.pending(ctx.paths.data_dir)
