"""The app through an OpenAI-compatible server (`[llm] provider = "openai"`), against the fake
llama-server of tests/fake_openai.py over real HTTP: chat turns (streaming, reasoning, tool
calls, the length cap, the prompt cache), cancel, every error kind, background JSON
requests, the CLI (`brain ask`, `ask -c`, extraction), the doctor, the model picker and
`openai:<model>` embeddings."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from assistant.chat.engine import ChatEngine, EngineSettings
from assistant.chat.events import Done, Failed, Thinking, Token, ToolCalled, Waiting
from assistant.cli.main import main
from assistant.context import AppContext
from assistant.llm.openai_catalog import OpenAICatalog
from assistant.llm.openai_transport import OpenAITransport
from assistant.llm.openai_wire import Endpoint
from assistant.llm.provider import Link, make_catalog
from assistant.services import Services
from assistant.sessions.store import SessionStore
from tests.fake_openai import DEFAULT_MODEL, FakeOpenAI
from tests.fixtures.chat import FakeKnowledge, FakeMemory, knowledge_item

Make = Callable[..., ChatEngine]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def make_engine(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[Make]:
    store = SessionStore.open(tmp_path / "sessions.sqlite3")
    engines: list[ChatEngine] = []

    def make(**overrides: Any) -> ChatEngine:  # EngineSettings fields; `replace` checks names
        settings = replace(EngineSettings(host=fake.url, model=DEFAULT_MODEL,
                                          provider="openai", timeout=5.0), **overrides)
        link = Link("openai", fake.url, settings.api_key_env, settings.api_key_file)
        engine = ChatEngine(settings, store, knowledge=FakeKnowledge([knowledge_item(1)]),
                            memory=FakeMemory(), catalog=make_catalog(link, 5.0))
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        await engine.aclose()
    store.close()


async def collect(engine: ChatEngine, message: str) -> list[object]:
    return [event async for event in engine.send(message)]


async def test_a_streamed_turn_with_usage_and_the_prompt_cache(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    fake.script_chat("Use tar -xf [1].")
    events = await collect(engine, "how do I extract a tar archive?")
    done = events[-1]
    assert isinstance(done, Done), events
    assert done.turn.answer == "Use tar -xf [1]."
    assert "".join(e.text for e in events if isinstance(e, Token)) == "Use tar -xf [1]."
    body = fake.chat_bodies()[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0]["role"] == "system"
    timings = done.turn.timings
    assert timings["prompt_eval_count"] == fake.generations[-1]["prompt"]
    assert timings["eval_count"] == fake.generations[-1]["completion"] == 4
    fake.script_chat("And -tf lists it.")
    second = (await collect(engine, "and how do I list it?"))[-1]
    assert isinstance(second, Done)
    # The system message and the first turn come from the server's cache.
    assert second.turn.timings["cached_tokens"] == fake.generations[-1]["cached"] > 0


async def test_after_the_reply_the_read_tokens_are_the_servers_uncached_count(
        make_engine: Make, fake: FakeOpenAI) -> None:
    """usage.prompt_tokens − prompt_tokens_details.cached_tokens, exactly: what the status
    line and `brain ask` show once the reply is in, where the estimate was shown before."""
    from assistant.chat.events import read_note

    engine = make_engine()
    for question in ("how do I extract a tar archive?", "and how do I list it?"):
        fake.script_chat("Use tar [1].")
        done = (await collect(engine, question))[-1]
        assert isinstance(done, Done)
        real = fake.generations[-1]
        read = real["prompt"] - real["cached"]
        assert done.turn.timings["prompt_read_tokens"] == read
        assert "prompt_read_approx" not in done.turn.timings
        assert read_note(done.turn.timings) == f"read {read:,} new prompt tokens"
    assert real["cached"] > 0  # the second turn: less read than its whole prompt


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_is_shown_apart_never_stored_as_the_answer(
        make_engine: Make, fake: FakeOpenAI, field: str) -> None:
    fake.script_chat("Canberra.", reasoning="The capital is not Sydney", reasoning_field=field)
    events = await collect(make_engine(), "capital of Australia?")
    assert "".join(e.text for e in events if isinstance(e, Thinking)) == (
        "The capital is not Sydney")
    done = events[-1]
    assert isinstance(done, Done) and done.turn.answer == "Canberra."


async def test_think_tags_in_content_are_split_as_for_ollama(
        make_engine: Make, fake: FakeOpenAI) -> None:
    fake.script_chat(["<think>", "hmm", "</think>", "Yes."])
    events = await collect(make_engine(), "ok?")
    assert isinstance(events[-1], Done) and events[-1].turn.answer == "Yes."
    assert "".join(e.text for e in events if isinstance(e, Thinking)) == "hmm"


async def test_crlf_framing(make_engine: Make, fake: FakeOpenAI) -> None:
    fake.crlf = True  # llama-cpp-python's server
    fake.script_chat("Fine, thanks.")
    done = (await collect(make_engine(), "how are you?"))[-1]
    assert isinstance(done, Done) and done.turn.answer == "Fine, thanks."


async def test_an_answer_cut_at_max_tokens_is_truncated(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    transport = OpenAITransport(Endpoint(fake.url), timeout=5.0, first_token_timeout=5.0)
    llm = transport.llm(model=DEFAULT_MODEL, window=8192, think=None, temperature=0.0,
                        keep_alive="", num_predict=3)
    fake.script_chat("one two three four five six")
    chunks = [c async for c in await llm.astream_chat([{"role": "user", "content": "count"}])]
    assert fake.chat_bodies()[-1]["max_tokens"] == 3
    assert "".join(c.delta for c in chunks) == "one two three"
    assert chunks[-1].raw["done_reason"] == "length"
    await transport.aclose()
    # Through the engine: a reply the server ends with finish_reason "length".
    fake.script_chat("a b c d e f g h", cap=2)
    done = (await collect(engine, "count to eight"))[-1]
    assert isinstance(done, Done) and done.turn.truncated and done.turn.answer == "a b"


async def test_tool_calls_round_trip_with_ids(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine(tools=True)
    fake.script_chat(tool_calls=[{"name": "search_knowledge", "arguments": {"query": "tar"}}])
    fake.script_chat("Found it [1].")
    events = await collect(engine, "search my notes for tar")
    assert any(isinstance(e, ToolCalled) for e in events), events
    assert isinstance(events[-1], Done) and events[-1].turn.answer == "Found it [1]."
    first, second = fake.chat_bodies()[-2:]
    assert next(t["function"]["name"] for t in first["tools"]) == "search_knowledge"
    call, result = second["messages"][-2:]
    assert call["role"] == "assistant"
    assert call["tool_calls"][0]["function"] == {"name": "search_knowledge",
                                                 "arguments": json.dumps({"query": "tar"})}
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]


async def test_cancel_closes_the_stream(make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    fake.script_chat(" ".join(["slow"] * 200), chunk_delay=0.05)
    stream = engine.send("tell me a long story")
    async for event in stream:
        if isinstance(event, Token):
            stream.cancel()
            break
    final = await stream.result()
    assert isinstance(final, Done) and final.interrupted
    fake.wait_for_disconnect()
    # The server stopped generating for the client that left (it would have sent 200).
    assert fake.generations[-1]["sent"] < 50
    assert 0 < len(final.turn.answer.split()) < 50


async def test_a_stream_cut_mid_answer_keeps_the_partial_answer(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    fake.script_chat("one two three four five", disconnect_after=2)  # connection reset
    fake.script_chat("one two three four five", end_after=2)  # closed without an end
    for _ in range(2):
        final = (await collect(engine, "count"))[-1]
        assert isinstance(final, Failed) and final.error.kind == "dropped", final
        assert final.partial == "one two" and final.turn is not None


async def test_waiting_sends_nothing_that_would_interrupt_the_answer(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    engine.catalog.facts(DEFAULT_MODEL)  # known, as mid-session
    fake.interrupt_requests = True  # llama-cpp-python's server
    fake.script_chat("It arrives whole.", first_delay=2.5)  # a wait shown for seconds
    events = await collect(engine, "slow start")
    assert isinstance(events[-1], Done), events[-1]
    assert events[-1].turn.answer == "It arrives whole."
    assert any(isinstance(e, Waiting) and e.phase == "reading" for e in events)


async def test_first_token_timeout(make_engine: Make, fake: FakeOpenAI) -> None:
    fake.script_chat("late", first_delay=3.0)
    final = (await collect(make_engine(first_token_timeout=1.0), "hi"))[-1]
    assert isinstance(final, Failed) and final.error.kind == "timeout"


async def test_the_shared_failure_messages_do_not_name_ollama(
        make_engine: Make, fake: FakeOpenAI) -> None:
    """The first-token timeout, a stalled stream and a cut one are worded in chat/errors.py
    for both providers: an OpenAI-compatible server's user is not sent to `ollama ps`."""
    fake.script_chat("late", first_delay=3.0)
    fake.script_chat(["one ", "two ", "three"], chunk_delay=3.0)
    fake.script_chat("one two three four five", disconnect_after=2)
    said = []
    for engine in (make_engine(first_token_timeout=1.0), make_engine(timeout=1.0),
                   make_engine()):
        final = (await collect(engine, "how do I list files"))[-1]
        assert isinstance(final, Failed), final
        said.append((final.error.kind, f"{final.error.message} / {final.error.hint}"))
    assert [kind for kind, _ in said] == ["timeout", "timeout", "dropped"]
    for _, text in said:  # (the settings keep their [ollama] names: ollama.timeout)
        assert "Ollama" not in text and "ollama ps" not in text, text
        assert "the model server" in text, text


@pytest.mark.parametrize(("setup", "kind", "hint_part"), [
    ("key", "unavailable", "$BRAIN_TEST_KEY"),
    ("model", "model_not_found", "brain doctor"),
    ("overflow", "context_overflow", "longer context"),
    ("server", "server", "log"),
    ("in_stream", "server", "log"),
    ("down", "unavailable", "llm.base_url"),
])
async def test_errors_map_to_the_chat_kinds(
        make_engine: Make, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch,
        setup: str, kind: str, hint_part: str) -> None:
    monkeypatch.setenv("BRAIN_TEST_KEY", "wrong")
    engine = make_engine(api_key_env="BRAIN_TEST_KEY")
    facts = engine.catalog.facts(DEFAULT_MODEL)  # known before the failure, as mid-session
    assert facts.context_length == 8192
    if setup == "key":
        fake.api_key = "right"
    elif setup == "model":
        engine.set_model("not-served", check=False)
        assert isinstance(engine.catalog, OpenAICatalog)
        engine.catalog._cache["not-served"] = facts
    elif setup == "overflow":
        fake.models[0].n_ctx = 20
    elif setup == "server":
        fake.script_chat(fail=500, error="llama_decode failed")
    elif setup == "in_stream":
        fake.script_chat("a b c d", fail=500, error="slot crashed", in_stream_error=True)
    else:
        fake.stop()
    final = (await collect(engine, "hello there"))[-1]
    assert isinstance(final, Failed), final
    assert final.error.kind == kind, final.error
    assert hint_part in (final.error.hint or ""), final.error.hint
    assert final.turn is not None and final.turn.question == "hello there"  # nothing lost


async def test_the_key_travels_as_a_bearer_token(
        make_engine: Make, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_TEST_KEY", "sk-local")
    fake.api_key = "sk-local"
    done = (await collect(make_engine(api_key_env="BRAIN_TEST_KEY"), "hi"))[-1]
    assert isinstance(done, Done)
    assert all(r.headers.get("Authorization") == "Bearer sk-local" for r in fake.requests)


async def test_preload_then_warm_up_are_one_token_requests(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    await engine.preload()
    await engine.drain()
    bodies = fake.chat_bodies()
    assert [b["max_tokens"] for b in bodies] == [1, 1]
    assert bodies[1]["messages"][0]["role"] == "system"  # the session's opening, warmed


async def test_background_requests_carry_the_schema(
        make_engine: Make, fake: FakeOpenAI) -> None:
    engine = make_engine()
    schema = {"type": "object", "properties": {"summary": {"type": "string"}},
              "required": ["summary"]}
    fake.script_chat(json={"summary": "tar questions"})
    reply = await engine.background.complete(  # the summaries' and extraction's path
        [{"role": "user", "content": "summarise"}], schema, 50)
    assert json.loads(reply) == {"summary": "tar questions"}
    body = fake.chat_bodies()[-1]
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert body["max_tokens"] == 50 and body["stream"] is False


async def test_a_server_that_refuses_json_schema_gets_json_object(
        make_engine: Make, fake: FakeOpenAI) -> None:
    fake.json_object_only = True  # llama-cpp-python's server
    engine = make_engine()
    schema = {"type": "object", "properties": {"memories": {"type": "array"}},
              "required": ["memories"]}
    for _ in range(2):
        fake.script_chat(json={"memories": []})
        reply = await engine.background.complete([{"role": "user", "content": "x"}],
                                                  schema, 20)
        assert json.loads(reply) == {"memories": []}
    formats = [b["response_format"]["type"] for b in fake.chat_bodies()]
    assert formats == ["json_schema", "json_object", "json_object"]  # learnt once
    assert fake.chat_bodies()[-1]["response_format"]["schema"] == schema


# --- the CLI, the doctor, the picker, embeddings ---------------------------------------------

@pytest.fixture
def openai_home(home: Path, fake: FakeOpenAI) -> Path:
    config_dir = home / "config"
    config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (config_dir / "config.toml").write_text(
        f'[llm]\nprovider = "openai"\nbase_url = "{fake.url}"\nmodel = "{DEFAULT_MODEL}"\n'
        '[ollama]\nhost = "http://127.0.0.1:9"\ntimeout = 5.0\n', encoding="utf-8")
    return home


def test_brain_ask_and_ask_c_through_the_openai_provider(
        openai_home: Path, fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    fake.script_chat("Paris is the capital of France.")
    code = main(["--home", str(openai_home), "ask", "--no-knowledge", "--no-memory",
                 "--json", "capital of France?"])
    out, err = capsys.readouterr()
    assert code == 0, err
    answer = json.loads(out)
    assert answer["answer"] == "Paris is the capital of France."
    assert answer["model"] == DEFAULT_MODEL
    fake.script_chat("About 2.1 million.")
    code = main(["--home", str(openai_home), "ask", "-c", "--no-knowledge", "--no-memory",
                 "--json", "and its population?"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["answer"] == "About 2.1 million."
    last = [b for b in fake.chat_bodies() if b.get("stream")][-1]
    assert "capital of France?" in json.dumps(last["messages"])  # the history went along


def test_cli_extraction_uses_a_json_schema_request(
        openai_home: Path, fake: FakeOpenAI) -> None:
    from assistant.memory.service import configured_chat_fn

    ctx = AppContext.load(str(openai_home))
    chat = configured_chat_fn(ctx.config)
    schema = {"type": "object", "properties": {"memories": {"type": "array"}},
              "required": ["memories"]}
    fake.script_chat(json={"memories": [{"text": "The user lives in Lisbon."}]})
    reply = chat([{"role": "user", "content": "I live in Lisbon"}], schema)
    assert json.loads(reply)["memories"][0]["text"] == "The user lives in Lisbon."
    body = fake.chat_bodies()[-1]
    assert body["response_format"]["type"] == "json_schema" and body["temperature"] == 0.0
    assert isinstance(body["max_tokens"], int)
    fake.json_object_only = True
    fake.script_chat(json={"memories": []})
    assert json.loads(chat([{"role": "user", "content": "hi"}], schema)) == {"memories": []}
    assert fake.chat_bodies()[-1]["response_format"] == {"type": "json_object",
                                                         "schema": schema}


def test_doctor_checks_the_server_and_the_model(openai_home: Path, fake: FakeOpenAI) -> None:
    from assistant.doctor import run_doctor

    checks = {c.name: c for c in run_doctor(str(openai_home)).checks}
    assert checks["model server"].ok, checks["model server"]
    assert fake.url in checks["model server"].detail
    assert checks["chat model"].ok and "context 8192" in checks["chat model"].detail
    fake.models = fake.models[1:]
    checks = {c.name: c for c in run_doctor(str(openai_home)).checks}
    assert not checks["chat model"].ok and "nomic-embed" in checks["chat model"].detail
    fake.stop()
    checks = {c.name: c for c in run_doctor(str(openai_home)).checks}
    assert not checks["model server"].ok and "llm.base_url" in checks["model server"].hint


def test_the_picker_lists_the_served_models(openai_home: Path) -> None:
    from tui.backend.ollama import OllamaAdapter

    adapter = OllamaAdapter(Services(AppContext.load(str(openai_home))))
    assert [m.name for m in adapter.models()] == [DEFAULT_MODEL, "nomic-embed"]
    assert adapter.status(DEFAULT_MODEL).ok
    missing = adapter.status("other")
    assert not missing.ok and missing.model_missing and DEFAULT_MODEL in missing.hint


def test_openai_embeddings_keep_the_input_order(openai_home: Path, fake: FakeOpenAI) -> None:
    from tests.fake_ollama import deterministic_embedding

    path = openai_home / "config" / "config.toml"
    path.write_text(path.read_text() + '[embedding]\nmodel = "openai:nomic-embed"\n')
    embedder = AppContext.load(str(openai_home)).embedder()
    assert embedder.model_id == "openai:nomic-embed"
    texts = ["tar archives", "git stash", "a third text"]
    vectors = embedder.embed_documents(texts)
    expected = [deterministic_embedding(t, 32) for t in texts]
    assert vectors.shape == (3, 32)
    for row, want in zip(vectors, expected, strict=True):
        assert abs(float(row @ __import__("numpy").asarray(want, dtype="float32")) - 1) < 1e-5
    assert fake.requests[-1].path == "/v1/embeddings"


def test_a_key_file_others_can_read_stops_the_turn(
        openai_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = openai_home / "key"
    key.write_text("sk-x")
    os.chmod(key, 0o644)
    path = openai_home / "config" / "config.toml"
    path.write_text(path.read_text().replace("[ollama]", f'api_key_file = "{key}"\n[ollama]'))
    code = main(["--home", str(openai_home), "ask", "--no-knowledge", "--no-memory", "hi"])
    err = capsys.readouterr().err
    assert code == 1 and "readable by other users" in err and "chmod 600" in err
