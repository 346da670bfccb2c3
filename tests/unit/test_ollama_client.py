"""OllamaClient against the fake server, and error mapping for every client we use."""

from __future__ import annotations

import time

import httpx
import ollama
import pytest

from assistant.errors import UserError
from assistant.llm.ollama_client import (
    ModelNotFound,
    OllamaClient,
    OllamaProtocolError,
    OllamaServerError,
    OllamaTimeout,
    OllamaUnavailable,
    map_exception,
    model_matches,
    normalize_host,
)
from tests.fake_ollama import FakeOllamaServer


@pytest.fixture
def client(fake_ollama: FakeOllamaServer):
    with OllamaClient(fake_ollama.url, timeout=5) as c:
        yield c


def test_version_models_and_show(client: OllamaClient, fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("llama3.2:1b", context_length=131072, family="llama",
                          parameter_size="1.2B", capabilities=("completion",))
    assert client.version() == fake_ollama.version
    assert client.is_up()
    models = {m.name: m for m in client.list_models()}
    assert set(models) == {"qwen3:4b", "nomic-embed-text:latest", "llama3.2:1b"}
    assert models["llama3.2:1b"].parameter_size == "1.2B"
    info = client.show("qwen3:4b")
    assert info.context_length == 262144  # qwen3.context_length, not rope.scaling.original_…
    assert info.supports_tools and info.supports_thinking and info.supports_chat
    assert info.thinking_only  # Qwen3-4B-Thinking-2507: its template cannot switch it off
    small = client.show("llama3.2:1b")
    assert (small.context_length, small.family, small.supports_tools) == (131072, "llama", False)
    assert client.show("nomic-embed-text").supports_embedding
    assert client.has_model("nomic-embed-text") and not client.has_model("qwen3")


def test_embed_batches_and_keeps_order(client: OllamaClient, fake_ollama: FakeOllamaServer) -> None:
    texts = [f"note number {i}" for i in range(300)]
    vectors = client.embed("nomic-embed-text", texts)
    assert len(vectors) == 300 and {len(v) for v in vectors} == {768}
    assert vectors[5] == client.embed("nomic-embed-text", ["note number 5"])[0]
    assert len(fake_ollama.requests_to("/api/embed")) == 4  # 128 + 128 + 44, then the single
    assert client.embed("nomic-embed-text", []) == []


def test_down_is_unavailable_fast_with_how_to_start(fake_ollama: FakeOllamaServer) -> None:
    url = fake_ollama.url
    fake_ollama.stop()
    with OllamaClient(url, timeout=30) as c:
        start = time.monotonic()
        assert not c.is_up()
        with pytest.raises(OllamaUnavailable) as err:
            c.list_models()
        assert time.monotonic() - start < 2
    assert str(err.value).startswith(f"Ollama is not running at {url}")
    assert "ollama serve" in (err.value.hint or "")
    assert isinstance(err.value, UserError)


def test_comes_back_after_restart(client: OllamaClient, fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.stop()
    assert not client.is_up()
    fake_ollama.start()
    assert client.is_up()


def test_missing_model_says_pull(client: OllamaClient) -> None:
    with pytest.raises(ModelNotFound) as err:
        client.show("llama9:70b")
    assert err.value.hint == "run `ollama pull llama9:70b`"
    assert "llama9:70b" in str(err.value)
    with pytest.raises(ModelNotFound):
        client.embed("nothing-here", ["x"])


def test_timeout(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script("/api/tags", delay=3)
    with OllamaClient(fake_ollama.url, timeout=0.3) as c:
        start = time.monotonic()
        with pytest.raises(OllamaTimeout) as err:
            c.list_models()
        assert time.monotonic() - start < 2
    assert "0.3 s" in str(err.value) and "timeout" in (err.value.hint or "")


def test_protocol_errors(client: OllamaClient, fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script("/api/version", raw_body=b"<html>router login</html>",
                       content_type="text/html")
    with pytest.raises(OllamaProtocolError, match="text/html"):
        client.version()
    fake_ollama.script("/api/tags", raw_body=b"{oops", content_type="application/json")
    with pytest.raises(OllamaProtocolError, match="invalid JSON"):
        client.list_models()
    fake_ollama.script("/api/tags", raw_body=b'{"models": 3}', content_type="application/json")
    with pytest.raises(OllamaProtocolError, match="no model list"):
        client.list_models()
    fake_ollama.script("/api/embed", raw_body=b'{"embeddings": [[0.1]]}',
                       content_type="application/json")
    with pytest.raises(OllamaProtocolError, match="wrong number"):
        client.embed("nomic-embed-text", ["a", "b"])


def test_server_error_keeps_ollamas_message(
    client: OllamaClient, fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.script_embed(fail=500, error="out of memory")
    with pytest.raises(OllamaServerError) as err:
        client.embed("nomic-embed-text", ["x"])
    assert err.value.status == 500 and "out of memory" in str(err.value)


def test_not_an_ollama_server(client: OllamaClient, fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script("/api/version", fail=404, raw_body=b"404 page not found")
    with pytest.raises(OllamaProtocolError, match="does not look like an Ollama server"):
        client.version()


@pytest.mark.parametrize(("given", "expected"), [
    ("", "http://localhost:11434"),
    ("localhost:11434", "http://localhost:11434"),
    ("http://127.0.0.1:1234/", "http://127.0.0.1:1234"),
    ("0.0.0.0", "http://127.0.0.1:11434"),
    ("https://ollama.lan", "https://ollama.lan"),
    ("myhost", "http://myhost:11434"),
    ("myhost:8080/", "http://myhost:8080"),
    ("http://[::1]:9000", "http://[::1]:9000"),
    ("[::1]", "http://[::1]:11434"),
])
def test_normalize_host(given: str, expected: str) -> None:
    assert normalize_host(given) == expected


def test_model_matches() -> None:
    assert model_matches("qwen3", "qwen3:latest")
    assert model_matches("qwen3:4b", "qwen3:4b")
    assert not model_matches("qwen3", "qwen3:4b")


# --- map_exception: errors raised by the other clients ------------------------------------------

def test_maps_ollama_package_errors(fake_ollama: FakeOllamaServer) -> None:
    c = ollama.Client(host=fake_ollama.url)
    with pytest.raises(ollama.ResponseError) as err:
        c.chat(model="nope:1b", messages=[{"role": "user", "content": "x"}])
    mapped = map_exception(err.value, fake_ollama.url, "nope:1b")
    assert isinstance(mapped, ModelNotFound) and mapped.hint == "run `ollama pull nope:1b`"
    fake_ollama.stop()
    with pytest.raises(ConnectionError) as down:
        c.list()
    assert isinstance(map_exception(down.value, fake_ollama.url), OllamaUnavailable)


def test_maps_llama_index_mid_stream_disconnect(fake_ollama: FakeOllamaServer) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.ollama import Ollama

    fake_ollama.script_chat(["one ", "two ", "three"], disconnect_after=1)
    llm = Ollama(model="qwen3:4b", base_url=fake_ollama.url, context_window=4096,
                 request_timeout=5)
    with pytest.raises(Exception) as err:  # whatever llama-index lets through
        for _ in llm.stream_chat([ChatMessage(role="user", content="hi")]):
            pass
    mapped = map_exception(err.value, fake_ollama.url, "qwen3:4b")
    assert isinstance(mapped, OllamaUnavailable)
    assert "closed the connection" in str(mapped)


def test_maps_in_stream_error_and_timeouts(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("a b c", error_after=1, error="llama runner process has terminated")
    c = ollama.Client(host=fake_ollama.url)
    with pytest.raises(ollama.ResponseError) as err:
        list(c.chat(model="qwen3:4b", messages=[{"role": "user", "content": "x"}], stream=True))
    mapped = map_exception(err.value, fake_ollama.url, "qwen3:4b")
    assert isinstance(mapped, OllamaServerError) and "runner process" in str(mapped)
    timeout = map_exception(httpx.ReadTimeout("slow"), fake_ollama.url, timeout=7)
    assert isinstance(timeout, OllamaTimeout) and "7 s" in str(timeout)


def test_chained_and_unrelated_exceptions() -> None:
    try:
        try:
            raise httpx.ConnectError("refused")
        except httpx.ConnectError as inner:
            raise RuntimeError("llm call failed") from inner
    except RuntimeError as outer:
        assert isinstance(map_exception(outer, "http://h:1"), OllamaUnavailable)
    assert map_exception(ValueError("a bug"), "http://h:1") is None


def test_running_models_come_from_ps(client: OllamaClient, fake_ollama: FakeOllamaServer) -> None:
    assert client.running() == []
    fake_ollama.preload("qwen3:4b", 8192)
    (running,) = client.running()
    assert (running.name, running.context_length) == ("qwen3:4b", 8192)


def test_an_error_inside_a_stream_has_no_minus_one() -> None:
    import ollama

    from assistant.llm.ollama_client import OllamaServerError, map_exception

    mapped = map_exception(ollama.ResponseError("llama runner process has terminated"),
                           "http://localhost:11434", "qwen3:4b")
    assert isinstance(mapped, OllamaServerError)
    assert str(mapped.args[0]) == "Ollama stopped with an error: llama runner process has " \
                                  "terminated"


@pytest.mark.parametrize(("capabilities", "template", "modelfile", "family", "expected"), [
    (("completion", "thinking"), "{{ .Prompt }}<think>\n", "", "qwen3", True),
    (("completion", "thinking"), "{{ if $.IsThinkSet }}/no_think{{ end }}", "", "qwen3", False),
    (("completion", "thinking"), "{{ if .Think }}<think>{{ end }}", "", "deepseek2", False),
    (("completion", "thinking"), "", "PARSER qwen3-thinking", "qwen3", True),
    (("completion", "thinking"), "Reasoning: {{ .ThinkLevel }}", "", "gptoss", True),
    (("completion", "tools"), "<think>", "", "llama", False),
])
def test_thinking_only_models_are_recognised(
    capabilities: tuple[str, ...], template: str, modelfile: str, family: str, expected: bool
) -> None:
    from assistant.llm.ollama_client import thinking_only

    assert thinking_only(capabilities, template, modelfile, family) is expected


def test_the_context_length_is_the_architectures_not_another_key() -> None:
    from assistant.llm.ollama_client import _arch_int

    info = {"general.architecture": "qwen3", "qwen3.rope.scaling.original_context_length": 32768,
            "qwen3.context_length": 262144}
    assert _arch_int(info, "qwen3", "context_length") == 262144
    assert _arch_int({"x.rope.scaling.original_context_length": 1, "x.context_length": 2}, "",
                     "context_length") == 2
