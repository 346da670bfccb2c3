"""One wire layer for Ollama's HTTP API (indexing/ollama_http.py, issue 24 item 1): every
client reads a host the same way, fails the same way, and no other module builds its own."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from assistant.llm.ollama_client import ModelNotFound, OllamaClient, OllamaProtocolError
from assistant.llm.provider import ollama_chat_fn
from assistant.memory.extraction import MEMORY_SCHEMA, NUM_PREDICT
from indexing import ollama_http as wire
from indexing.embedder import make_embedder
from indexing.embedders.base import EmbeddingModelError
from tests.fake_ollama import FakeOllamaServer

ROOT = Path(__file__).resolve().parents[2]


def test_the_embedder_reads_a_host_without_scheme_as_every_other_client(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    # `[ollama] host = "127.0.0.1:PORT"` is a plain Ollama address (the `ollama` CLI's rule);
    # the embedder used to post to "127.0.0.1:PORT/api/embed", which httpx cannot send.
    host = f"127.0.0.1:{fake_ollama.port}"
    emb = make_embedder("ollama:nomic-embed-text", cache_dir=tmp_path, ollama_host=host)
    vectors = emb.embed_documents(["alpha", "beta"])
    assert vectors.shape[0] == 2 and np.all(np.isfinite(vectors))
    with OllamaClient(host, timeout=5) as client:
        assert client.is_up()


def test_the_background_completion_fails_as_an_ollama_error_with_a_fix(
    fake_ollama: FakeOllamaServer
) -> None:
    # It used to raise httpx.HTTPStatusError: no message for the user, no `ollama pull` hint.
    chat = ollama_chat_fn(fake_ollama.url, "llama9:70b", timeout=5, num_ctx=4096,
                          num_predict=NUM_PREDICT)
    with pytest.raises(ModelNotFound) as info:
        chat([{"role": "user", "content": "I live in Lisbon."}], MEMORY_SCHEMA)
    assert info.value.hint == "run `ollama pull llama9:70b`"


def test_chat_json_sends_what_a_background_request_should(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(format_json={"memories": []})
    with OllamaClient(fake_ollama.url, timeout=5) as client:
        reply = client.chat_json("qwen3:4b", [{"role": "user", "content": "hi"}], MEMORY_SCHEMA,
                                 num_predict=64, num_ctx=8192, keep_alive="10m")
    assert reply == '{"memories": []}'
    body = fake_ollama.last_chat()
    assert body["format"] == MEMORY_SCHEMA and body["stream"] is False
    assert body["think"] is False and body["keep_alive"] == "10m"
    assert body["options"] == {"temperature": 0, "num_predict": 64, "num_ctx": 8192}


def test_an_embedding_that_is_not_numbers_is_a_malformed_reply(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    for _ in range(2):
        fake_ollama.script_embed(raw_body=b'{"embeddings": [["x", "y"]]}',
                                 content_type="application/json")
    with OllamaClient(fake_ollama.url, timeout=5) as client, \
            pytest.raises(OllamaProtocolError, match="not a number"):
        client.embed("nomic-embed-text", ["alpha"])
    emb = make_embedder("ollama:nomic-embed-text", cache_dir=tmp_path,
                        ollama_host=fake_ollama.url)
    with pytest.raises(EmbeddingModelError, match="unexpected /api/embed answer"):
        emb.embed_query("alpha")


def test_every_client_the_wire_builds_ignores_the_environment() -> None:
    with wire.sync_client("localhost", 5) as client:
        assert client._trust_env is False
        assert str(client.base_url) == "http://localhost:11434"
    assert wire.client_options("0.0.0.0:9000", wire.http_timeout(5))["trust_env"] is False


# Where an HTTP client may be built: the Ollama wire layer (sync and async), the
# OpenAI-compatible server's two, and the doctor's probe of a Chroma server. A new Ollama
# client elsewhere would bring back its own timeouts, proxy rule and error wording.
ALLOWED = {
    "indexing/ollama_http.py": 2,
    "assistant/llm/openai_wire.py": 1,
    "assistant/llm/openai_transport.py": 1,
    "assistant/doctor.py": 1,
}
CLIENT = re.compile(r"\b(?:httpx|ollama)\.(?:Async)?Client\(")


def test_no_module_builds_its_own_http_client() -> None:
    found: dict[str, int] = {}
    for folder in ("assistant", "indexing", "tui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            count = len(CLIENT.findall(path.read_text(encoding="utf-8")))
            if count:
                found[path.relative_to(ROOT).as_posix()] = count
    assert found == ALLOWED
