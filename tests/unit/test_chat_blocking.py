"""The engine for synchronous callers: iterator of events, threading.Event to cancel."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.chat.blocking import BlockingChat
from assistant.chat.engine import ChatEngine, EngineSettings
from assistant.chat.events import Done, Failed, Retrieved, Token
from assistant.chat.models import OllamaCatalog
from assistant.chat.sessions import SessionStore
from tests.fake_ollama import FakeOllama
from tests.fixtures.chat import FakeKnowledge, FakeMemory, knowledge_item


@pytest.fixture
def chat(tmp_path: Path, fake_ollama: FakeOllama) -> Iterator[BlockingChat]:
    store = SessionStore.open(tmp_path / "sessions.sqlite3")

    def make() -> ChatEngine:
        return ChatEngine(
            EngineSettings(host=fake_ollama.url, model="qwen3:4b", timeout=5.0), store,
            knowledge=FakeKnowledge(items=[knowledge_item(1)]), memory=FakeMemory(),
            catalog=OllamaCatalog(fake_ollama.url, 5.0),
        )

    blocking = BlockingChat(make)
    yield blocking
    blocking.close()
    store.close()


def test_events_arrive_in_order_from_a_plain_thread(
    chat: BlockingChat, fake_ollama: FakeOllama
) -> None:
    fake_ollama.script_chat("Answer [1].")
    events = list(chat.ask("question"))
    assert isinstance(events[0], Retrieved)
    assert "".join(e.text for e in events if isinstance(e, Token)) == "Answer [1]."
    assert isinstance(events[-1], Done)
    session = events[-1].turn.session_id

    fake_ollama.script_chat("Second.")
    events = list(chat.ask("again", session_id=session))
    assert isinstance(events[-1], Done) and events[-1].turn.seq == 2


def test_cancel_event_interrupts(chat: BlockingChat, fake_ollama: FakeOllama) -> None:
    fake_ollama.script_chat([f"w{i} " for i in range(100)], chunk_delay=0.05)
    cancel = threading.Event()
    events = []
    for event in chat.ask("long", cancel=cancel):
        events.append(event)
        if isinstance(event, Token) and sum(isinstance(e, Token) for e in events) == 2:
            cancel.set()
    final = events[-1]
    assert isinstance(final, Done) and final.interrupted
    assert len([e for e in events if isinstance(e, Token)]) < 20


def test_model_switch_and_failures_come_as_events(
    chat: BlockingChat, fake_ollama: FakeOllama
) -> None:
    assert "qwen3:4b" in chat.call(lambda e: e.available_models())
    events = list(chat.ask("hi", model="absent:1b"))
    final = events[-1]
    assert isinstance(final, Failed) and final.error.kind == "model_not_found"
    assert chat.engine.model == "absent:1b"
