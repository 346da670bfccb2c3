"""The chat engine's HTTP link to Ollama: one client per event loop, no proxy, the right timeouts.

Every request for the chat model — turns (through llama-index's `Ollama` LLM, which gets this
client instead of building its own), the preload, background jobs — goes through here, so they
share the connection, never consult HTTP(S)_PROXY/ALL_PROXY, and carry the options the caller
passes (the engine passes one num_ctx and keep_alive for a whole session).

Timeouts: Ollama sends nothing until the first token — not even headers — while it loads the
model and reads the prompt (minutes on a CPU), then chunks every few hundred milliseconds. So
httpx may wait up to `first_token_timeout` for a byte; the engine itself enforces the shorter
`timeout` between chunks once the answer has started (see reply.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from assistant.llm.ollama_client import async_ollama_client, http_timeout

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Completion:
    """A complete (non-streamed) reply."""

    content: str
    thinking: str
    done_reason: str
    prompt_eval_count: int | None = None
    eval_count: int | None = None


class OllamaTransport:
    def __init__(self, host: str, *, timeout: float, first_token_timeout: float) -> None:
        self.host = host
        self.timeout = timeout
        self.first_token_timeout = first_token_timeout
        self._clients: dict[int, Any] = {}  # event loop id → ollama.AsyncClient
        self._llms: dict[tuple[Any, ...], Any] = {}

    def client(self) -> Any:
        """The `ollama.AsyncClient` of the running event loop (an httpx async client must not
        outlive or cross its loop)."""
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            client = async_ollama_client(
                self.host, http_timeout(self.timeout, first_byte=self.first_token_timeout)
            )
            self._clients[loop_id] = client
        return client

    def llm(self, *, model: str, window: int, think: bool | None, temperature: float,
            keep_alive: str, num_predict: int | None = None) -> Any:
        """llama-index's Ollama LLM for one (model, options), cached per loop: building it
        costs ~20 ms. `context_window` is given so it never asks /api/show itself;
        `num_predict` caps the answer (Ollama then ends it with done_reason "length")."""
        loop_id = id(asyncio.get_running_loop())
        key = (model, window, think, temperature, keep_alive, num_predict, loop_id)
        llm = self._llms.get(key)
        if llm is None:
            from llama_index.llms.ollama import Ollama

            llm = Ollama(
                model=model,
                base_url=self.host,
                temperature=temperature,
                context_window=window,
                request_timeout=self.first_token_timeout,
                keep_alive=keep_alive,
                thinking=think,
                async_client=self.client(),
                # Merged into the request's options (llama_index Ollama._model_kwargs).
                additional_kwargs={"num_predict": num_predict} if num_predict else {},
            )
            self._llms = {k: v for k, v in self._llms.items() if k[-1] == loop_id}
            self._llms[key] = llm
        return llm

    async def preload(self, model: str, *, num_ctx: int, keep_alive: str) -> str:
        """Load `model` now with the session's num_ctx and keep_alive — Ollama's empty chat
        request — so the first question does not pay the load. Returns done_reason ("load")."""
        response = await self.client().chat(
            model=model, messages=[], options={"num_ctx": num_ctx}, keep_alive=keep_alive
        )
        return str(getattr(response, "done_reason", "") or "")

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
        response = await self.client().chat(
            model=model, messages=messages, format=schema, options=options,
            keep_alive=keep_alive, think=think, stream=False,
        )
        message = response.message
        return Completion(
            content=str(message.content or ""),
            thinking=str(getattr(message, "thinking", "") or ""),
            done_reason=str(response.done_reason or ""),
            prompt_eval_count=response.prompt_eval_count,
            eval_count=response.eval_count,
        )

    async def running(self, timeout: float = 1.5) -> dict[str, int | None] | None:
        """Loaded models → their context length (/api/ps); None when Ollama did not answer
        within `timeout` — it holds /api/ps while a model loads (server/sched.go)."""
        try:
            response = await asyncio.wait_for(self.client().ps(), timeout)
        except TimeoutError:
            return None
        except Exception as exc:  # progress display only: never fail a turn over it
            log.debug("ollama ps failed: %s", exc)
            return None
        return {str(m.model or m.name or ""): m.context_length for m in response.models}

    async def aclose(self) -> None:
        """Close the current loop's client (others belong to loops that are gone)."""
        loop_id = id(asyncio.get_running_loop())
        client = self._clients.pop(loop_id, None)
        self._llms = {k: v for k, v in self._llms.items() if k[-1] != loop_id}
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
