"""The chat engine's link to an OpenAI-compatible server: what `OllamaTransport` does for
Ollama (llm/ollama_transport.py), the OpenAI way.

- turns stream over SSE (`llm(...).astream_chat`, chunks shaped as the reply reader reads
  them: `delta`, `additional_kwargs["thinking_delta"]`, and on the last one `raw` — the end
  in Ollama's keys, see openai_wire.ollama_style_stats — and `tool_calls`);
- the preload is a 1-token request (there is no "load only" request in this API);
- background jobs are non-streamed requests with `response_format` = their JSON schema;
- timeouts: connecting fails fast, the first byte may take `first_token_timeout` (servers
  send headers late while they read the prompt), the reply reader bounds the silence
  between chunks;
- cancelling the awaiting task closes the HTTP stream: llama-server, vLLM and LM Studio stop
  generating for a client that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import httpx

from assistant.llm import openai_errors as oe
from assistant.llm.errors import OPENAI_WORDS, ChatError, dropped
from assistant.llm.ollama_transport import Completion, StreamChunk
from assistant.llm.openai_wire import (
    Endpoint,
    StreamEnd,
    ToolCallBuffer,
    json_object_format,
    ollama_style_stats,
    read_chunk,
    refused_format,
    request_body,
    sse_data,
)
from indexing.ollama_http import http_timeout

log = logging.getLogger(__name__)


def wire_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """llama-index ChatMessages (or plain dicts) as OpenAI messages. Tool calls get ids, and
    the tool results that follow answer them in order (the API pairs them by id)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    ids = itertools.count(1)
    for message in messages:
        if isinstance(message, dict):
            out.append(dict(message))
            continue
        role = getattr(message.role, "value", message.role)
        calls = [b for b in getattr(message, "blocks", None) or []
                 if type(b).__name__ == "ToolCallBlock"]
        if role == "assistant" and calls:
            wired = []
            for block in calls:
                call_id = f"call_{next(ids)}"
                pending.append(call_id)
                wired.append({"id": call_id, "type": "function", "function": {
                    "name": block.tool_name, "arguments": json.dumps(block.tool_kwargs)}})
            out.append({"role": "assistant", "content": message.content or "",
                        "tool_calls": wired})
        elif role == "tool":
            call_id = pending.pop(0) if pending else f"call_{next(ids)}"
            out.append({"role": "tool", "tool_call_id": call_id,
                        "content": message.content or ""})
        else:
            out.append({"role": str(role), "content": message.content or ""})
    return out


class OpenAIChat:
    """One (model, options) for streamed turns: `await astream_chat(messages, tools=…)`."""

    def __init__(self, transport: OpenAITransport, model: str, *, temperature: float,
                 num_predict: int | None) -> None:
        self._transport = transport
        self.model = model
        self.temperature = temperature
        self.num_predict = num_predict

    async def astream_chat(
        self, messages: Sequence[Any], tools: Sequence[dict[str, Any]] = ()
    ) -> AsyncGenerator[StreamChunk, None]:
        body = request_body(self.model, wire_messages(messages), stream=True,
                            temperature=self.temperature, num_predict=self.num_predict,
                            tools=tools)
        return self._transport.stream(body)


class OpenAITransport:
    def __init__(self, endpoint: Endpoint, *, timeout: float,
                 first_token_timeout: float) -> None:
        self.endpoint = endpoint
        self.host = endpoint.base_url  # named in the reply reader's messages
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout
        self._clients: dict[int, httpx.AsyncClient] = {}  # event loop id → client
        self._json_object = False  # the server refused response_format json_schema
        self._asked = ""  # the model of the last streamed request (the wait display)

    def client(self) -> httpx.AsyncClient:
        """The running loop's client (an httpx async client must not cross loops)."""
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            client = httpx.AsyncClient(
                timeout=http_timeout(self.timeout, first_byte=self.first_token_timeout),
                headers=self.endpoint.headers(), trust_env=False)
            self._clients[loop_id] = client
        return client

    def llm(self, *, model: str, window: int, think: bool | None, temperature: float,
            keep_alive: str, num_predict: int | None = None) -> OpenAIChat:
        """`window`, `keep_alive` and `think` have no request field here: the context is
        the server's (set where it starts), it keeps its model loaded, and reasoning is
        shown whenever the server reports it."""
        del window, keep_alive, think
        return OpenAIChat(self, model, temperature=temperature, num_predict=num_predict)

    def _error(self, exc: BaseException, model: str, *, streaming: bool = False) -> ChatError:
        return oe.from_exception(exc, base_url=self.endpoint.base_url, model=model,
                                 key_env=self.endpoint.key_env, timeout=self.timeout,
                                 streaming=streaming)

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[StreamChunk, None]:
        """The reply's chunks, then one last chunk with the end (raw stats, tool calls)."""
        model = str(body.get("model", ""))
        self._asked = model
        url = f"{self.endpoint.base_url}/chat/completions"
        end, tools = StreamEnd(), ToolCallBuffer()
        started = False
        try:
            async with self.client().stream("POST", url, json=body) as response:
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise oe.from_status(response.status_code, oe.error_text(text),
                                         base_url=self.endpoint.base_url, model=model,
                                         key_env=self.endpoint.key_env)
                async for payload in sse_data(response.aiter_lines()):
                    try:
                        data = json.loads(payload)
                    except ValueError as exc:
                        raise oe.protocol("a stream chunk is not JSON",
                                          self.endpoint.base_url) from exc
                    if isinstance(data, dict) and "error" in data:
                        raise self._in_stream_error(data, model)
                    delta = read_chunk(data if isinstance(data, dict) else {}, end, tools)
                    if delta.content or delta.reasoning:
                        started = True
                        extra = {"thinking_delta": delta.reasoning} if delta.reasoning else {}
                        yield StreamChunk(delta.content, extra)
        except ChatError:
            raise
        except (httpx.HTTPError, OSError) as exc:
            raise self._error(exc, model, streaming=started) from exc
        if not end.finish_reason:
            # Every server ends a reply with a finish_reason; a stream closed without one
            # was cut (the server died or a proxy dropped it).
            raise dropped(partial=started, server=OPENAI_WORDS)
        yield StreamChunk(raw=ollama_style_stats(end), tool_calls=tools.calls())

    def _in_stream_error(self, data: dict[str, Any], model: str) -> ChatError:
        error = data.get("error")
        status = error.get("code") if isinstance(error, dict) else None
        return oe.from_status(status if isinstance(status, int) and status >= 400 else 500,
                              oe.payload_error(data), base_url=self.endpoint.base_url,
                              model=model, key_env=self.endpoint.key_env)

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        model = str(body.get("model", ""))
        if self._json_object:
            body = json_object_format(body) or body
        try:
            response = await self.client().post(f"{self.endpoint.base_url}/chat/completions",
                                                json=body)
        except httpx.HTTPError as exc:
            raise self._error(exc, model) from exc
        retry = json_object_format(body)
        if retry is not None and refused_format(response.status_code, response.text):
            self._json_object = True  # this server wants the older form from now on
            return await self._post(retry)
        if response.status_code >= 400:
            raise oe.from_status(response.status_code, oe.error_text(response.text),
                                 base_url=self.endpoint.base_url, model=model,
                                 key_env=self.endpoint.key_env)
        try:
            data = response.json()
        except ValueError as exc:
            raise oe.protocol("the reply is not JSON", self.endpoint.base_url) from exc
        if not isinstance(data, dict):
            raise oe.protocol("the reply is not a JSON object", self.endpoint.base_url)
        if "error" in data:
            raise self._in_stream_error(data, model)
        return data

    async def preload(self, model: str, *, num_ctx: int, keep_alive: str) -> str:
        """Make the server load `model` (LM Studio and Ollama's /v1 load on first use): a
        1-token request. Returns "load" like Ollama's empty request."""
        del num_ctx, keep_alive
        await self._post(request_body(model, [{"role": "user", "content": "Hi"}],
                                      stream=False, temperature=0.0, num_predict=1))
        return "load"

    async def complete(
        self,
        model: str,
        messages: list[dict[str, str]],
        *,
        num_ctx: int,
        keep_alive: str,
        schema: dict[str, Any] | None = None,
        num_predict: int | None = None,
        think: bool | None = False,
        temperature: float = 0.0,
    ) -> Completion:
        """One non-streamed reply (background jobs, the cache warm-up)."""
        del num_ctx, keep_alive, think
        data = await self._post(request_body(model, list(messages), stream=False,
                                             temperature=temperature, num_predict=num_predict,
                                             schema=schema))
        end, tools = StreamEnd(), ToolCallBuffer()
        delta = read_chunk(data, end, tools)
        stats = ollama_style_stats(end)
        return Completion(
            content=delta.content, thinking=delta.reasoning,
            done_reason=str(stats["done_reason"]),
            prompt_eval_count=stats.get("prompt_eval_count"),
            eval_count=stats.get("eval_count"),
        )

    async def running(self, timeout: float = 1.5) -> dict[str, int | None] | None:
        """For the wait display: the model being asked is taken as loaded ("reading the
        prompt"). Deliberately no request: llama-cpp-python's server interrupts the answer
        it is generating when any other request arrives (its `interrupt_requests`, on by
        default), so probing /v1/models while waiting cut every answer."""
        del timeout
        return {self._asked: None} if self._asked else None

    async def aclose(self) -> None:
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()
