"""The chat transport over the wire layer (issue 24 item 1): the chat's requests are shaped as
the `ollama` package under llama-index's Ollama LLM shaped them (Ollama renders and caches the
prompt from them), and read into the chunks the reply reader reads."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from llama_index.core.base.llms.types import TextBlock, ToolCallBlock
from llama_index.core.llms import ChatMessage

from assistant.chat.reply import _tool_calls
from assistant.chat.tools import tool_specs
from assistant.llm import errors
from assistant.llm.ollama_transport import OllamaTransport, StreamChunk
from tests.fake_ollama import FakeOllamaServer


def transport(fake: FakeOllamaServer) -> OllamaTransport:
    return OllamaTransport(fake.url, timeout=5, first_token_timeout=10)


async def test_a_tool_round_is_sent_as_before_and_its_calls_read(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.script_chat(tool_calls=[{"name": "search_knowledge", "arguments": {"query": "x"}}])
    t = transport(fake_ollama)
    llm = t.llm(model="qwen3:4b", window=4096, think=False, temperature=0.2, keep_alive="10m")
    messages = [
        ChatMessage(role="system", content=""),
        ChatMessage(role="user", content="hey"),
        ChatMessage(role="assistant", blocks=[
            TextBlock(text=""),
            ToolCallBlock(tool_name="search_knowledge", tool_kwargs={"query": "y"})]),
        ChatMessage(role="tool", content="result",
                    additional_kwargs={"tool_name": "search_knowledge"}),
    ]
    specs = tool_specs(conversations=True)
    chunks = [c async for c in await llm.astream_chat(messages, tools=specs)]
    await t.aclose()
    assert _tool_calls(chunks[-1]) == [("search_knowledge", {"query": "x"})]
    assert chunks[-1].raw["done"] is True and chunks[-1].raw["done_reason"] == "stop"
    # What the ollama package sent: empty fields dropped, no tool name on a tool result.
    assert fake_ollama.last_chat() == {
        "model": "qwen3:4b",
        "messages": [
            {"role": "system"},
            {"role": "user", "content": "hey"},
            {"role": "assistant", "tool_calls": [
                {"function": {"name": "search_knowledge", "arguments": {"query": "y"}}}]},
            {"role": "tool", "content": "result"},
        ],
        "tools": specs,
        "stream": True,
        "think": False,
        "options": {"temperature": 0.2, "num_ctx": 4096},
        "keep_alive": "10m",
    }


async def test_reasoning_and_answer_arrive_apart(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("Hello there.", thinking="a thought")
    t = transport(fake_ollama)
    llm = t.llm(model="qwen3:4b", window=4096, think=True, temperature=0.2, keep_alive="5m",
                num_predict=300)
    chunks: list[StreamChunk] = [c async for c in await llm.astream_chat(
        [ChatMessage(role="user", content="hi")])]
    await t.aclose()
    assert "".join(c.additional_kwargs["thinking_delta"] or "" for c in chunks) == "a thought"
    assert "".join(c.delta for c in chunks) == "Hello there."
    assert fake_ollama.last_chat()["options"] == {"temperature": 0.2, "num_ctx": 4096,
                                                  "num_predict": 300}


@pytest.mark.parametrize(("script", "kind", "words"), [
    ({"fail": 400, "error": "the input length exceeds the context length"},
     "context_overflow", "does not fit in the model's context window: the input length"),
    ({"error_after": 2, "error": "out of memory"}, "server",
     "Ollama stopped with an error: out of memory"),
    ({"fail": 500, "error": "llama runner process has terminated"}, "server",
     "Ollama error (500): llama runner process has terminated"),
])
async def test_failures_keep_their_words(fake_ollama: FakeOllamaServer, script: dict[str, object],
                                         kind: str, words: str) -> None:
    fake_ollama.script_chat("one two three four", **script)
    t = transport(fake_ollama)
    llm = t.llm(model="qwen3:4b", window=4096, think=None, temperature=0.2, keep_alive="5m")
    with pytest.raises(Exception) as info:
        async for _ in await llm.astream_chat([ChatMessage(role="user", content="hi")]):
            pass
    await t.aclose()
    mapped = errors.map_error(info.value, host=fake_ollama.url, model="qwen3:4b", timeout_s=5)
    assert mapped.kind == kind and words in mapped.message


async def test_one_client_per_loop_without_a_proxy(fake_ollama: FakeOllamaServer) -> None:
    t = transport(fake_ollama)
    client = t.client()
    assert isinstance(client, httpx.AsyncClient) and t.client() is client
    assert client._trust_env is False
    assert await t.preload("qwen3:4b", num_ctx=4096, keep_alive="5m") == "load"
    assert await t.running() == {"qwen3:4b": 4096}
    await t.aclose()


async def test_a_reader_that_stops_early_closes_the_stream_at_once(
    fake_ollama: FakeOllamaServer,
) -> None:
    # The reply reader acloses the stream when it gives up (a stall, an error it raises):
    # the HTTP stream must close then — Ollama stops only for a client that is gone.
    fake_ollama.script_chat("one two three four five six seven eight", chunk_delay=0.3)
    t = transport(fake_ollama)
    llm = t.llm(model="qwen3:4b", window=4096, think=None, temperature=0.2, keep_alive="5m")
    stream = await llm.astream_chat([ChatMessage(role="user", content="hi")])
    held = [await anext(stream), await anext(stream)]  # a reference stays: no collection
    await stream.aclose()
    deadline = time.monotonic() + 10
    while not any(d.phase == "streaming" for d in fake_ollama.disconnects):
        assert time.monotonic() < deadline, fake_ollama.disconnects
        await asyncio.sleep(0.02)
    assert held and fake_ollama.pending_scripts("/api/chat") == 0
    await t.aclose()
