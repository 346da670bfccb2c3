"""The OpenAI-compatible wire format (assistant/llm/openai_wire.py): SSE framing as servers
send it, tool-call fragments, the end of a stream in the engine's keys, options mapped."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from assistant.llm.openai_wire import (
    StreamEnd,
    ToolCallBuffer,
    ollama_style_stats,
    parse_models,
    read_chunk,
    request_body,
    sse_data,
)


def payloads(text: str) -> list[str]:
    async def lines() -> AsyncIterator[str]:
        for line in text.split("\n"):
            yield line

    async def run() -> list[str]:
        return [p async for p in sse_data(lines())]

    return asyncio.run(run())


def test_sse_events_end_at_done_and_skip_comments() -> None:
    text = ': keep-alive\n\ndata: {"a": 1}\n\ndata: {"b": 2}\n\ndata: [DONE]\n\ndata: {"c": 3}\n\n'
    assert payloads(text) == ['{"a": 1}', '{"b": 2}']


def test_sse_crlf_framing_and_multi_line_data() -> None:
    # llama-cpp-python's server (sse-starlette) ends lines with CRLF.
    text = 'data: {"a":\r\ndata: 1}\r\n\r\nevent: x\r\ndata:[DONE]\r\n\r\n'
    assert payloads(text) == ['{"a":\n1}']


def test_tool_call_fragments_are_joined_by_index() -> None:
    buffer = ToolCallBuffer()
    buffer.add([{"index": 0, "id": "c0", "function": {"name": "search_knowledge",
                                                      "arguments": '{"que'}}])
    buffer.add([{"index": 1, "function": {"name": "remember", "arguments": ""}}])
    buffer.add([{"index": 0, "function": {"arguments": 'ry": "tar"}'}}])
    buffer.add([{"index": 1, "function": {"arguments": "{not json"}}])
    assert buffer.calls() == [("search_knowledge", {"query": "tar"}), ("remember", {})]


def test_the_end_in_ollama_keys() -> None:
    end = StreamEnd()
    tools = ToolCallBuffer()
    read_chunk({"choices": [{"delta": {}, "finish_reason": "length"}]}, end, tools)
    read_chunk({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 7,
                                         "prompt_tokens_details": {"cached_tokens": 100}},
                "timings": {"prompt_ms": 12.5, "predicted_ms": 40.0, "cache_n": 99}},
               end, tools)
    assert ollama_style_stats(end) == {
        "done_reason": "length", "prompt_eval_count": 120, "eval_count": 7,
        "cached_tokens": 100, "prompt_eval_duration": 12_500_000,
        "eval_duration": 40_000_000,
    }
    # No usage (a server that ignores include_usage): nothing invented.
    assert ollama_style_stats(StreamEnd()) == {"done_reason": "stop"}


def test_reasoning_fields() -> None:
    end, tools = StreamEnd(), ToolCallBuffer()
    assert read_chunk({"choices": [{"delta": {"reasoning_content": "hm"}}]}, end,
                      tools).reasoning == "hm"
    assert read_chunk({"choices": [{"delta": {"reasoning": "ok", "content": "A"}}]}, end,
                      tools).content == "A"


def test_generic_options_are_mapped() -> None:
    schema = {"type": "object"}
    body = request_body("m", [{"role": "user", "content": "x"}], stream=True,
                        temperature=0.2, num_predict=64, schema=schema)
    assert body["max_tokens"] == 64 and "num_predict" not in json.dumps(body)
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "reply", "schema": schema}}
    assert body["stream_options"] == {"include_usage": True}
    assert "stream_options" not in request_body("m", [], stream=False)


def test_models_with_and_without_a_context_length() -> None:
    models = parse_models({"data": [
        {"id": "a", "meta": {"n_ctx_train": 8192}}, {"id": "b", "max_model_len": 4096},
        {"id": "c"}, {"no": "id"}]})
    assert [(m.id, m.context_length) for m in models] == [("a", 8192), ("b", 4096), ("c", None)]
