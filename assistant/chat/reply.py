"""Reading one streamed model reply: the silent wait, then answer and reasoning apart.

Ollama sends nothing before the first token: loading the model and reading the prompt take
minutes on a CPU. Until then `ReplyReader` emits `Waiting` about once a second (loading vs
reading, from `/api/ps`), and gives up after `first_token_timeout`. Once the reply has
started, `timeout` bounds the silence between two chunks: a stall fails the turn with the
partial answer kept. Cancelling the task at any point closes the HTTP stream, which makes
Ollama stop (a load in progress is aborted).

Reasoning arrives in `message.thinking` (→ `Thinking` events) or inside `content`
(`ReasoningSplitter`); only answer text reaches `Token` events and the stored answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from assistant.chat.events import AnswerReplaced, ChatEvent, Thinking, Token, Waiting, WaitPhase
from assistant.llm import errors
from assistant.llm.thinking import ReasoningSplitter
from indexing.llama_import import load_llama_index

TICK_SECONDS = 1.0  # how often `Waiting` is emitted
PROBE_EVERY_SECONDS = 3.0  # how often /api/ps is asked whether the model has loaded


class ReplySink(Protocol):
    """Where the reply goes as it arrives (the engine's turn state), so whatever ends the
    turn — done, cancelled, stalled — finds the partial answer there."""

    parts: list[str]
    thinking: list[str]
    timings: dict[str, float]
    streaming: bool

    def ms(self, key: str, since: float | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class WaitInfo:
    host: str
    model: str
    prompt_tokens: Callable[[], int]  # estimated tokens Ollama must read (not cached)
    window: int  # num_ctx of the request: a runner loaded with another size reloads
    server: errors.ServerWords = errors.OLLAMA_WORDS  # how the error messages name the server


@dataclass
class ReplyEnd:
    """How the reply ended: the last raw chunk, the tool calls asked for."""

    raw: dict[str, Any] = field(default_factory=dict)
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    truncated: bool = False  # done_reason "length"


Probe = Callable[[], Awaitable[dict[str, int | None] | None]]


class ReplyReader:
    def __init__(
        self,
        *,
        emit: Callable[[ChatEvent], None],
        sink: ReplySink,
        timeout: float,
        first_token_timeout: float,
        untagged: bool,
        probe: Probe,
        wait: WaitInfo,
        on_untagged: Callable[[], None] = lambda: None,
    ) -> None:
        self._emit = emit
        self._sink = sink
        self._timeout = timeout
        self._first_token_timeout = first_token_timeout
        self._splitter = ReasoningSplitter(untagged=untagged)
        self._probe = probe
        self._wait = wait
        self._on_untagged = on_untagged
        self._thinking_started: float | None = None
        self._answer_started = False

    async def read(self, stream: AsyncIterator[Any]) -> ReplyEnd:
        end = ReplyEnd()
        last: Any = None
        agen = stream.__aiter__()
        try:
            first = await self._first_chunk(agen)
            if first is None:
                raise errors.protocol("the reply stream was empty", self._wait.host,
                                      server=self._wait.server)
            self._sink.streaming = True
            last = first
            self._take(first)
            while True:
                try:
                    # asyncio.timeout, not wait_for: no task per chunk, so chunks already
                    # received are read without a trip through the event loop each — on the
                    # UI's loop, a busy repaint would otherwise throttle a fast model.
                    async with asyncio.timeout(self._timeout):
                        chunk = await agen.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise errors.stalled(self._timeout, partial=bool(self._sink.parts),
                                         server=self._wait.server) from None
                last = chunk
                self._take(chunk)
        finally:
            aclose = getattr(agen, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        raw = getattr(last, "raw", None) or {}
        end.raw = raw if isinstance(raw, dict) else {}
        end.truncated = end.raw.get("done_reason") == "length"
        self._finish(cut_short=end.truncated)
        end.tool_calls = _tool_calls(last)
        return end

    # --- the silent wait ---------------------------------------------------------------------

    async def _first_chunk(self, agen: AsyncIterator[Any]) -> Any:
        """The first chunk, emitting `Waiting` meanwhile; None for an empty stream."""
        started = time.monotonic()
        task: asyncio.Future[Any] = asyncio.ensure_future(agen.__anext__())
        probe: asyncio.Future[Any] | None = asyncio.ensure_future(self._probe())
        phase: WaitPhase = "loading"
        last_probe = started
        try:
            deadline = started + self._first_token_timeout
            while True:
                wait = max(0.0, min(TICK_SECONDS, deadline - time.monotonic()))
                done, _ = await asyncio.wait({task}, timeout=wait)
                if done:
                    try:
                        return task.result()
                    except StopAsyncIteration:
                        return None
                now = time.monotonic()
                if probe is not None and probe.done():
                    phase = self._phase(probe.result() if not probe.exception() else None)
                    probe = None
                if probe is None and phase == "loading" and now - last_probe >= (
                        PROBE_EVERY_SECONDS):
                    probe, last_probe = asyncio.ensure_future(self._probe()), now
                elapsed = now - started
                if elapsed >= self._first_token_timeout:
                    raise errors.first_token_timeout(self._wait.model, self._first_token_timeout,
                                                     loading=phase == "loading",
                                                     server=self._wait.server)
                self._emit(Waiting(phase, round(elapsed, 1), self._wait.model,
                                   self._wait.prompt_tokens(), self._first_token_timeout))
        finally:
            for pending in (task, probe):
                if pending is not None and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(BaseException):
                        await pending

    def _phase(self, running: dict[str, int | None] | None) -> WaitPhase:
        from assistant.llm.ollama_client import model_matches

        if running is None:
            return "loading"  # /api/ps does not answer while a model loads
        for name, context in running.items():
            if model_matches(self._wait.model, name):
                return "reading" if context in (None, self._wait.window) else "loading"
        return "loading"

    # --- chunks ------------------------------------------------------------------------------

    def _take(self, response: Any) -> None:
        extra = getattr(response, "additional_kwargs", None) or {}
        thinking = extra.get("thinking_delta") or ""
        if thinking:
            self._think(thinking)
        delta = getattr(response, "delta", None) or ""
        if delta:
            parts = self._splitter.feed(delta)
            self._apply(parts.thinking, parts.answer, parts.replaced)

    def _finish(self, *, cut_short: bool) -> None:
        parts = self._splitter.finish(cut_short=cut_short)
        self._apply(parts.thinking, parts.answer, parts.replaced)
        if self._thinking_started is not None and "thinking_ms" not in self._sink.timings:
            self._sink.timings["thinking_ms"] = round(
                (time.monotonic() - self._thinking_started) * 1000, 2)

    def _apply(self, thinking: str, answer: str, replaced: tuple[str, str] | None) -> None:
        if replaced is not None:
            moved_to_thinking = bool(replaced[0]) and not self._sink.thinking
            self._sink.thinking[:] = [replaced[0]] if replaced[0] else []
            self._sink.parts[:] = [replaced[1]] if replaced[1] else []
            if moved_to_thinking:
                self._on_untagged()
                if self._thinking_started is None:
                    self._thinking_started = time.monotonic()
            self._emit(AnswerReplaced(replaced[0], replaced[1]))
            return
        if thinking:
            self._think(thinking)
        if answer:
            if not self._answer_started:
                self._answer_started = True
                if "first_token_ms" not in self._sink.timings:
                    self._sink.ms("first_token_ms")
                if self._thinking_started is not None:
                    self._sink.timings["thinking_ms"] = round(
                        (time.monotonic() - self._thinking_started) * 1000, 2)
            self._sink.parts.append(answer)
            self._emit(Token(answer))

    def _think(self, text: str) -> None:
        now = time.monotonic()
        if self._thinking_started is None:
            self._thinking_started = now
            if "first_thought_ms" not in self._sink.timings:
                self._sink.ms("first_thought_ms")
        self._sink.thinking.append(text)
        self._emit(Thinking(text, round(now - self._thinking_started, 1)))


def _tool_calls(last: Any) -> list[tuple[str, dict[str, Any]]]:
    if last is None:
        return []
    parsed = getattr(last, "tool_calls", None)  # an OpenAI-compatible stream's last chunk
    if isinstance(parsed, list):
        return parsed
    load_llama_index()
    from llama_index.core.base.llms.types import ToolCallBlock

    message = getattr(last, "message", None)
    blocks = getattr(message, "blocks", None) or []
    return [
        (b.tool_name, dict(b.tool_kwargs) if isinstance(b.tool_kwargs, dict) else {})
        for b in blocks
        if isinstance(b, ToolCallBlock)
    ]
