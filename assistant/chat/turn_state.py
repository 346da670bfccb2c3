"""What one turn has produced so far (`TurnState`, filled by each stage, enough to store the
turn however it ends), and the server's counts read into its timings."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from assistant.chat.prompt import Prompt
from assistant.sessions.turn import MemoryItem, Recalled, Source, ToolUse, Turn


@dataclass
class TurnState:
    """What one turn has produced so far: enough to store it however it ends."""

    message: str
    started: float
    model: str
    parts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)  # shown apart, never stored as answer
    sources: list[Source] = field(default_factory=list)
    memories: tuple[MemoryItem, ...] = ()
    conversations: list[Recalled] = field(default_factory=list)
    low_confidence: bool = False
    tools: list[ToolUse] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    prompt: Prompt | None = None
    log_id: int | None = None
    truncated: bool = False  # the model stopped at its length limit
    streaming: bool = False
    recorded: bool = False  # its write was started (complete, interrupted or failed)
    reported: bool = False  # its final event (Done or Failed) was emitted
    write: asyncio.Future[Turn] | None = None  # the write, on the sessions thread
    @property
    def answer(self) -> str:
        return "".join(self.parts)

    def ms(self, key: str, since: float | None = None) -> None:
        self.timings[key] = round((time.perf_counter() - (since or self.started)) * 1000, 2)


def estimate_read_tokens(timings: dict[str, Any]) -> None:
    """Without the server's cached count (Ollama's Python client drops
    prompt_eval_cached_count from its reply model), the tokens it read are our estimate of the
    uncached part scaled by its real count of the whole prompt: exact when nothing was cached,
    and marked as approximate (`prompt_read_approx`) for the status line."""
    whole, estimated = timings.get("prompt_eval_count"), timings.get("prompt_tokens")
    new = timings.get("prompt_new_tokens")
    if "prompt_read_tokens" in timings or not (
            isinstance(whole, int) and isinstance(estimated, int) and isinstance(new, int)
            and whole > 0 and estimated > 0 and new > 0):
        return
    timings["prompt_read_tokens"] = min(whole, round(new * whole / estimated))
    timings["prompt_read_approx"] = new < estimated


def _ns_to_ms(value: Any) -> float | None:
    return round(value / 1e6, 2) if isinstance(value, int) and value >= 0 else None


def note_stats(state: TurnState, raw: dict[str, Any]) -> None:
    """What the server reports in its last chunk. prompt_eval_count is the whole prompt
    (cache included, Ollama's llm/llama_server.go promptEvalCount; usage.prompt_tokens);
    the cached part is Ollama's prompt_eval_cached_count or an OpenAI-compatible server's
    cached_tokens. Their difference, summed over the rounds, is `prompt_read_tokens`: the
    real count of what the server read, shown after the reply where the estimate was
    shown while waiting (else estimated at the turn's end: estimate_read_tokens)."""
    whole = raw.get("prompt_eval_count")
    if isinstance(whole, int):
        state.timings["prompt_eval_count"] = whole
    if isinstance(raw.get("eval_count"), int):
        state.timings["eval_count"] = state.timings.get("eval_count", 0) + raw["eval_count"]
    cached = raw.get("cached_tokens", raw.get("prompt_eval_cached_count"))
    if isinstance(cached, int) and not isinstance(cached, bool):
        state.timings["cached_tokens"] = cached
    if isinstance(whole, int) and isinstance(cached, int) and 0 <= cached <= whole:
        state.timings["prompt_read_tokens"] = (
            state.timings.get("prompt_read_tokens", 0) + whole - cached)
    for key, out in (("prompt_eval_duration", "prompt_eval_ms"),
                     ("load_duration", "load_ms")):
        value = _ns_to_ms(raw.get(key))
        if value is not None:
            state.timings[out] = state.timings.get(out, 0.0) + value

