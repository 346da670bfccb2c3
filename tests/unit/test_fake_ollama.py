"""The fake Ollama speaks the real protocol: checked with httpx, the `ollama` client and
llama-index's Ollama LLM, the three ways our code talks to Ollama."""

from __future__ import annotations

import json
import threading
import time

import httpx
import ollama
import pytest

from tests.fake_ollama import FakeOllamaServer, deterministic_embedding, instance_of_schema

_USER_X = [{"role": "user", "content": "x"}]


def _ndjson(response: httpx.Response) -> list[dict]:
    return [json.loads(line) for line in response.iter_lines() if line]


def test_version_tags_and_show(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("llama3.2:1b", context_length=131072, family="llama",
                          capabilities=("completion",))
    with httpx.Client(base_url=fake_ollama.url) as client:
        assert client.get("/api/version").json() == {"version": fake_ollama.version}
        assert client.get("/").text == "Ollama is running"
        names = [m["name"] for m in client.get("/api/tags").json()["models"]]
        assert names == ["qwen3:4b", "nomic-embed-text:latest", "llama3.2:1b"]
        shown = client.post("/api/show", json={"model": "llama3.2:1b"}).json()
    assert shown["model_info"]["llama.context_length"] == 131072
    assert shown["details"]["family"] == "llama"
    assert shown["capabilities"] == ["completion"]


def test_ollama_client_lists_and_shows(fake_ollama: FakeOllamaServer) -> None:
    client = ollama.Client(host=fake_ollama.url)
    assert [m.model for m in client.list().models] == ["qwen3:4b", "nomic-embed-text:latest"]
    info = client.show("qwen3:4b")
    assert info.modelinfo is not None
    assert info.modelinfo["qwen3.context_length"] == 262144  # Qwen3-4B-2507
    assert "tools" in (info.capabilities or [])
    assert info.details is not None and info.details.parameter_size == "4.0B"


def test_streaming_chat_with_the_ollama_client(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("The answer is 42.")
    client = ollama.Client(host=fake_ollama.url)
    parts = list(client.chat(model="qwen3:4b", stream=True,
                             messages=[{"role": "user", "content": "what is the answer?"}]))
    assert "".join(p.message.content or "" for p in parts) == "The answer is 42."
    assert len(parts) > 2  # really streamed in deltas
    assert all(not p.done for p in parts[:-1])
    final = parts[-1]
    assert final.done and final.done_reason == "stop"
    assert final.eval_count and final.prompt_eval_count
    assert fake_ollama.last_chat()["messages"][-1]["content"] == "what is the answer?"


def test_default_reply_echoes_and_bare_name_means_latest(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("mistral")
    client = ollama.Client(host=fake_ollama.url)
    reply = client.chat(model="mistral:latest", messages=[{"role": "user", "content": "ping"}])
    assert reply.message.content == "echo: ping"
    assert reply.done


def test_non_streaming_chat_is_one_json_object(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(["Hel", "lo"], thinking="")  # no reasoning
    with httpx.Client(base_url=fake_ollama.url) as client:
        r = client.post("/api/chat", json={"model": "qwen3:4b", "stream": False,
                                           "messages": [{"role": "user", "content": "hi"}]})
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["message"] == {"role": "assistant", "content": "Hello"}
    assert body["done"] is True and body["done_reason"] == "stop"


def test_stream_is_chunked_ndjson(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(["a", "b", "c"], thinking="")
    with httpx.Client(base_url=fake_ollama.url) as client, client.stream(
        "POST", "/api/chat", json={"model": "qwen3:4b", "messages": _USER_X}
    ) as r:
        assert r.headers["content-type"] == "application/x-ndjson"
        assert r.headers["transfer-encoding"] == "chunked"
        objects = _ndjson(r)
    assert [o["message"]["content"] for o in objects] == ["a", "b", "c", ""]
    assert objects[-1]["done"] is True


def test_format_request_gets_scripted_json(fake_ollama: FakeOllamaServer) -> None:
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}, "required": ["facts"]}
    fake_ollama.script_chat(format_json={"facts": ["likes tea"]})
    client = ollama.Client(host=fake_ollama.url)
    reply = client.chat(model="qwen3:4b", format=schema,
                        messages=[{"role": "user", "content": "extract"}])
    assert json.loads(reply.message.content or "") == {"facts": ["likes tea"]}
    assert fake_ollama.last_chat()["format"] == schema
    # Unscripted: a minimal instance of the schema.
    reply = client.chat(model="qwen3:4b", format=schema,
                        messages=[{"role": "user", "content": "extract"}])
    assert json.loads(reply.message.content or "") == {"facts": []}


def test_tools_request_gets_scripted_tool_calls(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(tool_calls=[{"name": "search_notes", "arguments": {"query": "git"}}])
    tool = {"type": "function", "function": {"name": "search_notes", "description": "search",
                                             "parameters": {"type": "object", "properties": {}}}}
    client = ollama.Client(host=fake_ollama.url)
    parts = list(client.chat(model="qwen3:4b", tools=[tool], stream=True,
                             messages=[{"role": "user", "content": "find git notes"}]))
    calls = [c for p in parts for c in (p.message.tool_calls or [])]
    assert len(calls) == 1
    assert calls[0].function.name == "search_notes"
    assert calls[0].function.arguments == {"query": "git"}
    assert parts[-1].done


def test_model_without_tool_support_is_refused(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("gemma:2b", capabilities=("completion",))
    client = ollama.Client(host=fake_ollama.url)
    with pytest.raises(ollama.ResponseError) as err:
        client.chat(model="gemma:2b", tools=[{"type": "function", "function": {"name": "f"}}],
                    messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 400
    assert "does not support tools" in err.value.error


def test_thinking_deltas(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("Yes.", thinking="Let me think.")
    client = ollama.Client(host=fake_ollama.url)
    parts = list(client.chat(model="qwen3:4b", think=True, stream=True,
                             messages=[{"role": "user", "content": "ok?"}]))
    assert "".join(p.message.thinking or "" for p in parts) == "Let me think."
    assert "".join(p.message.content or "" for p in parts) == "Yes."


def test_unknown_model_is_404_with_ollamas_wording(fake_ollama: FakeOllamaServer) -> None:
    with httpx.Client(base_url=fake_ollama.url) as client:
        r = client.post("/api/chat", json={"model": "nope:1b", "messages": []})
    assert r.status_code == 404
    assert r.json() == {"error": 'model "nope:1b" not found, try pulling it first'}
    with pytest.raises(ollama.ResponseError) as err:
        ollama.Client(host=fake_ollama.url).show("nope:1b")
    assert err.value.status_code == 404


def test_scripted_500_and_in_stream_error(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(fail=500, error="out of memory")
    fake_ollama.script_chat("one two three", error_after=1, error="runner crashed",
                            thinking="")
    client = ollama.Client(host=fake_ollama.url)
    msgs = [{"role": "user", "content": "x"}]
    with pytest.raises(ollama.ResponseError) as err:
        client.chat(model="qwen3:4b", messages=msgs)
    assert (err.value.status_code, err.value.error) == (500, "out of memory")
    got = []
    with pytest.raises(ollama.ResponseError, match="runner crashed"):
        for part in client.chat(model="qwen3:4b", messages=msgs, stream=True):
            got.append(part.message.content)
    assert got == ["one "]


def test_mid_stream_disconnect(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(["a", "b", "c", "d"], disconnect_after=2, thinking="")
    received = []
    body = {"model": "qwen3:4b", "messages": _USER_X}
    with (
        httpx.Client(base_url=fake_ollama.url) as client,
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", "/api/chat", json=body) as r,
    ):
        for line in r.iter_lines():
            received.append(json.loads(line)["message"]["content"])
    assert received == ["a", "b"]
    # The server survives and answers the next request.
    assert httpx.get(f"{fake_ollama.url}/api/version").status_code == 200


def test_slow_first_byte_times_out_the_client(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script("/api/tags", delay=5)
    start = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{fake_ollama.url}/api/tags", timeout=0.3)
    assert time.monotonic() - start < 2
    fake_ollama.stop()  # must not wait for the sleeping handler
    assert time.monotonic() - start < 3


def test_chunk_delay_paces_the_stream(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(["a", "b", "c"], chunk_delay=0.1, thinking="")
    stamps = []
    with httpx.Client(base_url=fake_ollama.url) as client, client.stream(
        "POST", "/api/chat", json={"model": "qwen3:4b", "messages": _USER_X}
    ) as r:
        for _ in r.iter_lines():
            stamps.append(time.monotonic())
    assert len(stamps) == 4
    assert stamps[-1] - stamps[0] >= 0.25


def test_stop_and_start_on_the_same_port(fake_ollama: FakeOllamaServer) -> None:
    url = fake_ollama.url
    client = httpx.Client(base_url=url, timeout=2)
    assert client.get("/api/version").status_code == 200
    fake_ollama.stop()
    with pytest.raises(httpx.ConnectError):
        client.get("/api/version")
    fake_ollama.start()
    assert fake_ollama.url == url
    assert client.get("/api/version").json()["version"] == fake_ollama.version
    client.close()


def test_generate_stream_and_non_stream(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_generate("short title")
    client = ollama.Client(host=fake_ollama.url)
    parts = list(client.generate(model="qwen3:4b", prompt="title this", stream=True))
    texts = [p.response for p in parts if p.response is not None]
    assert len(texts) == len(parts) and "".join(texts) == "short title"
    assert parts[-1].done and parts[-1].context
    assert client.generate(model="qwen3:4b", prompt="hello").response == "echo: hello"


def test_embed_is_deterministic_and_batched(fake_ollama: FakeOllamaServer) -> None:
    client = ollama.Client(host=fake_ollama.url)
    one = client.embed(model="nomic-embed-text", input="git stash pop")
    many = client.embed(model="nomic-embed-text", input=["git stash pop", "tea"])
    assert len(one.embeddings) == 1 and len(one.embeddings[0]) == 768
    assert list(many.embeddings[0]) == list(one.embeddings[0])
    assert list(one.embeddings[0]) == deterministic_embedding("git stash pop", 768)
    fake_ollama.script_embed(fail=500, error="boom")
    with pytest.raises(ollama.ResponseError):
        client.embed(model="nomic-embed-text", input="x")


def test_match_routes_scripts_to_the_right_request(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat(format_json={"ok": True}, match=lambda body: "format" in body)
    fake_ollama.script_chat("plain answer")
    client = ollama.Client(host=fake_ollama.url)
    msgs = [{"role": "user", "content": "x"}]
    assert client.chat(model="qwen3:4b", messages=msgs).message.content == "plain answer"
    assert client.chat(model="qwen3:4b", messages=msgs, format="json").message.content == (
        '{"ok": true}'
    )
    assert fake_ollama.pending_scripts() == 0


def test_raw_body_for_protocol_errors(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script("/api/version", raw_body=b"<html>proxy</html>", content_type="text/html")
    r = httpx.get(f"{fake_ollama.url}/api/version")
    assert r.headers["content-type"] == "text/html"
    assert r.text == "<html>proxy</html>"


def test_bad_requests(fake_ollama: FakeOllamaServer) -> None:
    with httpx.Client(base_url=fake_ollama.url) as client:
        assert client.post("/api/chat", content=b"{not json").status_code == 400
        assert client.post("/api/chat", json={"messages": []}).json() == {
            "error": "model is required"
        }
        assert client.get("/api/nothing").status_code == 404


def test_concurrent_requests_are_all_answered_and_recorded(fake_ollama: FakeOllamaServer) -> None:
    errors: list[BaseException] = []

    def ask(i: int) -> None:
        try:
            client = ollama.Client(host=fake_ollama.url)
            reply = client.chat(model="qwen3:4b", messages=[{"role": "user", "content": f"q{i}"}])
            assert reply.message.content == f"echo: q{i}"
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not errors
    assert len(fake_ollama.chat_requests) == 16


def test_schema_instances() -> None:
    schema = {
        "type": "object",
        "properties": {
            "kind": {"enum": ["fact", "preference"]},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": ["string", "null"]},
        },
        "required": ["kind", "n", "tags", "note"],
    }
    assert instance_of_schema(schema) == {"kind": "fact", "n": 0, "tags": [], "note": ""}


def test_llama_index_stream_chat(fake_ollama: FakeOllamaServer) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.ollama import Ollama

    fake_ollama.script_chat("Streaming through LlamaIndex works.", thinking="")
    llm = Ollama(model="qwen3:4b", base_url=fake_ollama.url, context_window=8192,
                 request_timeout=5)
    deltas = [r.delta for r in llm.stream_chat([ChatMessage(role="user", content="test")])]
    assert "".join(d or "" for d in deltas) == "Streaming through LlamaIndex works."
    sent = fake_ollama.last_chat()
    assert sent["options"]["num_ctx"] == 8192
    assert sent["messages"] == [{"role": "user", "content": "test"}]
    # Without context_window it asks /api/show, which the fake answers like Ollama.
    llm2 = Ollama(model="qwen3:4b", base_url=fake_ollama.url, request_timeout=5)
    assert llm2.metadata.context_window == 262144


async def test_llama_index_astream_chat(fake_ollama: FakeOllamaServer) -> None:
    from llama_index.core.llms import ChatMessage
    from llama_index.llms.ollama import Ollama

    fake_ollama.script_chat(["As", "ync"])
    llm = Ollama(model="qwen3:4b", base_url=fake_ollama.url, context_window=4096,
                 request_timeout=5)
    deltas = [r.delta async for r in await llm.astream_chat([ChatMessage(role="user",
                                                                         content="a")])]
    assert "".join(d or "" for d in deltas) == "Async"


def test_client_hanging_up_mid_stream_does_not_hurt_the_server(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.script_chat([f"w{i} " for i in range(50)], chunk_delay=0.01, thinking="")
    body = {"model": "qwen3:4b", "messages": _USER_X}
    with httpx.Client(base_url=fake_ollama.url) as client, client.stream(
        "POST", "/api/chat", json=body
    ) as r:
        first = next(r.iter_lines())
    assert json.loads(first)["message"]["content"] == "w0 "
    # The cancelled stream's handler hits a broken pipe; the server keeps serving.
    after = ollama.Client(host=fake_ollama.url)
    assert after.chat(model="qwen3:4b", messages=_USER_X).message.content == "echo: x"


def test_stop_during_a_stream_cuts_it_off_promptly(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat([f"w{i} " for i in range(100)], chunk_delay=0.2)
    body = {"model": "qwen3:4b", "messages": _USER_X}
    received: list[str] = []
    start = time.monotonic()
    with (
        httpx.Client(base_url=fake_ollama.url, timeout=10) as client,
        pytest.raises(httpx.RemoteProtocolError),
        client.stream("POST", "/api/chat", json=body) as r,
    ):
        for line in r.iter_lines():
            received.append(line)
            if len(received) == 2:
                threading.Thread(target=fake_ollama.stop).start()
    assert 2 <= len(received) < 10
    assert time.monotonic() - start < 3


def test_scripted_token_counts_and_done_reason(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("cut", done_reason="length", prompt_eval_count=4000, eval_count=7)
    reply = ollama.Client(host=fake_ollama.url).chat(model="qwen3:4b", messages=_USER_X)
    assert (reply.done_reason, reply.prompt_eval_count, reply.eval_count) == ("length", 4000, 7)


def test_a_request_cut_off_before_its_body_is_no_chat_request(
        fake_ollama: FakeOllamaServer) -> None:
    import socket
    from urllib.parse import urlsplit

    from tests.waiting import wait_until

    address = urlsplit(fake_ollama.url)
    with socket.create_connection((address.hostname, address.port)) as client:
        client.sendall(b"POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       b"Content-Length: 120\r\n\r\n")
    wait_until(lambda: fake_ollama.requests_to("/api/chat"), what="the cut-off request")
    hello = {"model": "qwen3:4b", "stream": False,
             "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(f"{fake_ollama.url}/api/chat", json=hello)
    assert [r.body for r in fake_ollama.requests_to("/api/chat")][0] is None  # noqa: RUF015
    assert [b["messages"][0]["content"] for b in fake_ollama.chat_requests] == ["hi"]
