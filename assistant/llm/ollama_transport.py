"""The chat engine's HTTP link to Ollama: one client per event loop, no proxy, the right timeouts.

Every request for the chat model — streamed turns (`llm(...).astream_chat`), the preload,
background jobs, the /api/ps probe — goes through here, over the wire layer
(indexing/ollama_http.py) that every Ollama client is built from, so they share the
connection, never consult HTTP(S)_PROXY/ALL_PROXY, and carry the options the caller passes (the
engine passes one num_ctx and keep_alive for a whole session). Requests are shaped as the
`ollama` package under llama-index's `Ollama` LLM shaped them before (ollama_http.chat_body),
so what Ollama renders — and caches — is unchanged.

Timeouts: Ollama sends nothing until the first token — not even headers — while it loads the
model and reads the prompt (minutes on a CPU), then chunks every few hundred milliseconds. So
httpx may wait up to `first_token_timeout` for a byte; the engine itself enforces the shorter
`timeout` between chunks once the answer has started (see chat/reply.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from indexing import ollama_http as wire

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Completion:
    """A complete (non-streamed) reply."""

    content: str
    thinking: str
    done_reason: str
    prompt_eval_count: int | None = None
    eval_count: int | None = None


@dataclass
class StreamChunk:
    """One piece of a streamed reply, in the attributes `ReplyReader` reads: the answer's
    `delta`, `additional_kwargs["thinking_delta"]`, the line as Ollama sent it (`raw`: on the
    last one done_reason and the token counts), the tool calls asked for so far."""

    delta: str = ""
    additional_kwargs: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None


def wire_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """llama-index ChatMessages (or plain dicts) as Ollama messages, as llama-index's Ollama
    LLM converted them: text blocks joined, reasoning as `thinking`, tool-call blocks as
    `tool_calls` (a tool result carries no tool name: it never did)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, dict):
            out.append(dict(message))
            continue
        wired: dict[str, Any] = {"role": str(getattr(message.role, "value", message.role)),
                                 "content": ""}
        for block in getattr(message, "blocks", None) or []:
            kind = type(block).__name__
            if kind == "TextBlock":
                wired["content"] += block.text
            elif kind == "ThinkingBlock":
                if block.content:
                    wired["thinking"] = block.content
            elif kind == "ToolCallBlock":
                wired.setdefault("tool_calls", []).append(
                    {"function": {"name": block.tool_name, "arguments": block.tool_kwargs}})
            else:
                raise ValueError(f"unsupported message block: {kind}")
        legacy = (getattr(message, "additional_kwargs", None) or {}).get("tool_calls")
        if legacy and not wired.get("tool_calls"):
            wired["tool_calls"] = legacy
        out.append(wired)
    return out


class OllamaChat:
    """One (model, options) for streamed turns: `await astream_chat(messages, tools=…)`."""

    def __init__(self, transport: OllamaTransport, model: str, *, options: dict[str, Any],
                 think: bool | None, keep_alive: str) -> None:
        self._transport = transport
        self.model = model
        self.options = options
        self.think = think
        self.keep_alive = keep_alive

    async def astream_chat(
        self, messages: Sequence[Any], tools: Sequence[dict[str, Any]] = ()
    ) -> AsyncGenerator[StreamChunk, None]:
        body = wire.chat_body(self.model, wire_messages(messages), stream=True,
                              options=dict(self.options), keep_alive=self.keep_alive,
                              think=self.think, tools=tools)
        return self._transport.stream(body)


class OllamaTransport:
    def __init__(self, host: str, *, timeout: float, first_token_timeout: float) -> None:
        self.host = host
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout
        self._clients: dict[int, httpx.AsyncClient] = {}  # event loop id → client

    def client(self) -> httpx.AsyncClient:
        """The running event loop's client (an httpx async client must not outlive or cross
        its loop)."""
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            client = wire.async_client(
                self.host, wire.http_timeout(self.timeout, first_byte=self.first_token_timeout))
            self._clients[loop_id] = client
        return client

    def llm(self, *, model: str, window: int, think: bool | None, temperature: float,
            keep_alive: str, num_predict: int | None = None) -> OllamaChat:
        """The streamed turns of one (model, options). `window` is the request's num_ctx;
        `num_predict` caps the answer (Ollama then ends it with done_reason "length")."""
        options: dict[str, Any] = {"temperature": temperature, "num_ctx": window}
        if num_predict:
            options["num_predict"] = num_predict
        return OllamaChat(self, model, options=options, think=think, keep_alive=keep_alive)

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[StreamChunk, None]:
        """The reply's chunks; each carries the tool calls asked for so far (the last one has
        them all: Ollama may repeat a call in later lines, counted once)."""
        calls: list[tuple[str, dict[str, Any]]] = []
        seen: set[tuple[str, str]] = set()
        # aclosing: a reader that stops early (aclose at a yield) closes the HTTP stream now,
        # not when the inner generator is collected — Ollama stops generating for a client
        # that is gone.
        async with contextlib.aclosing(wire.stream(self.client(), "/api/chat", body)) as parts:
            async for part in parts:
                message = part.get("message")
                if not isinstance(message, dict) or message.get("content") is None:
                    continue  # what llama-index skipped: a line without a message
                for call in message.get("tool_calls") or []:
                    function = (call.get("function") if isinstance(call, dict) else None) or {}
                    name = str(function.get("name", ""))
                    arguments = function.get("arguments", {})
                    if (name, str(arguments)) in seen:
                        continue
                    seen.add((name, str(arguments)))
                    calls.append((name, dict(arguments) if isinstance(arguments, dict) else {}))
                yield StreamChunk(
                    delta=str(message.get("content") or ""),
                    additional_kwargs={"thinking_delta": message.get("thinking")},
                    raw=part, tool_calls=list(calls))

    async def preload(self, model: str, *, num_ctx: int, keep_alive: str) -> str:
        """Load `model` now with the session's num_ctx and keep_alive — Ollama's empty chat
        request — so the first question does not pay the load. Returns done_reason ("load")."""
        data = await wire.arequest(self.client(), "POST", "/api/chat", wire.chat_body(
            model, [], stream=False, options={"num_ctx": num_ctx}, keep_alive=keep_alive))
        return str(data.get("done_reason") or "")

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
        """One non-streamed reply (background jobs). Cancelling the awaiting task closes the
        connection, which makes Ollama drop the request (and frees it for the user)."""
        options: dict[str, Any] = {"num_ctx": num_ctx, "temperature": temperature}
        if num_predict is not None:
            options["num_predict"] = num_predict
        data = await wire.arequest(self.client(), "POST", "/api/chat", wire.chat_body(
            model, messages, stream=False, options=options, keep_alive=keep_alive,
            think=think, schema=schema))
        message = data.get("message")
        if not isinstance(message, dict):
            raise wire.MalformedReply("/api/chat", "no message")
        return Completion(
            content=str(message.get("content") or ""),
            thinking=str(message.get("thinking") or ""),
            done_reason=str(data.get("done_reason") or ""),
            prompt_eval_count=_count(data.get("prompt_eval_count")),
            eval_count=_count(data.get("eval_count")),
        )

    async def running(self, timeout: float = 1.5) -> dict[str, int | None] | None:
        """Loaded models → their context length (/api/ps); None when Ollama did not answer
        within `timeout` — it holds /api/ps while a model loads (server/sched.go)."""
        try:
            data = await asyncio.wait_for(
                wire.arequest(self.client(), "GET", "/api/ps"), timeout)
        except TimeoutError:
            return None
        except Exception as exc:  # progress display only: never fail a turn over it
            log.debug("ollama ps failed: %s", exc)
            return None
        return {str(m.get("model") or m.get("name") or ""): _count(m.get("context_length"))
                for m in data.get("models") or [] if isinstance(m, dict)}

    async def aclose(self) -> None:
        """Close the current loop's client (others belong to loops that are gone)."""
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.pop(loop_id, None)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
