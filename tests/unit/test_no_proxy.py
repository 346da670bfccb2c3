"""No proxy ever sees a prompt (issue 12): with HTTP(S)_PROXY/ALL_PROXY pointing at a dead
port, every client to Ollama still works — chat turns (llama-index's Ollama LLM gets our own
client, built with trust_env=False), background extraction, the management client. The Chroma
server client is covered in tests/integration/test_chroma_server.py."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import ollama
import pytest

from assistant.chat.events import Done
from assistant.llm.ollama_client import OllamaClient
from assistant.llm.provider import ollama_chat_fn
from assistant.memory.extraction import MEMORY_SCHEMA, NUM_PREDICT
from tests.fake_ollama import FakeOllamaServer
from tests.fixtures.chat import ChatRig


@pytest.fixture
def dead_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"  # closed: nothing listens there
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy"):
        monkeypatch.setenv(name, url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    yield url


def test_the_proxy_is_really_dead_for_a_client_that_trusts_the_environment(
    dead_proxy: str, fake_ollama: FakeOllamaServer
) -> None:
    # What llama-index builds when it is not given a client: it would fail here.
    with pytest.raises((ConnectionError, httpx.ProxyError, httpx.ConnectError)):
        ollama.Client(host=fake_ollama.url).list()


async def test_a_chat_turn_ignores_the_proxy(dead_proxy: str, chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat("Straight to Ollama.")
    done = await chat_rig.make().ask("hello")
    assert isinstance(done, Done) and done.turn.answer == "Straight to Ollama."
    assert await chat_rig.make().preload() >= 0


def test_background_extraction_ignores_the_proxy(dead_proxy: str,
                                                 fake_ollama: FakeOllamaServer) -> None:
    chat = ollama_chat_fn(fake_ollama.url, "qwen3:4b", timeout=5, num_ctx=8192,
                          num_predict=NUM_PREDICT)
    assert chat([{"role": "user", "content": "I live in Lisbon."}], MEMORY_SCHEMA)
    assert fake_ollama.last_chat()["options"]["num_ctx"] == 8192


def test_the_management_client_ignores_the_proxy(dead_proxy: str,
                                                 fake_ollama: FakeOllamaServer) -> None:
    with OllamaClient(fake_ollama.url, timeout=5) as client:
        assert client.is_up()
        assert client.running() == []
