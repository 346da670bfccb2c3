"""What happens inside the fake Ollama between a request and its reply, modelled on the real
server so the app meets the same behaviour it will meet on a laptop (tests/fake_ollama.py is the
HTTP side). Each rule names the ollama/ollama source it follows (snapshot in
/work/.mirror/ollama+ollama/repo):

- Scheduling (server/sched.go): one runner per model, one request at a time
  (`OLLAMA_NUM_PARALLEL` defaults to 1, envconfig/config.go); a request whose
  `options.num_ctx` differs from the loaded runner's reloads it (`needsReload` compares the
  runner options, with num_ctx first capped at the model's trained context by
  `effectiveContext`); a request without num_ctx gets the server default (4096); a request
  whose client left while queued is skipped ("pending request cancelled", `processPending`);
  a load whose client leaves is aborted (`WaitUntilRunning(req.ctx)`); `/api/ps` waits while
  a runner loads (`loadedModels` takes the runner's `refMu`, held "until running or aborted").
- Prompt (server/prompt.go `chatPrompt`): messages are dropped from the front, system messages
  kept, until the rendered prompt fits num_ctx; the last message always stays. The runner then
  cuts a prompt still longer than num_ctx - 1 to its first `num_keep` (4) tokens + the tail
  (llm/llama_server.go, `contextShiftPromptLimit`).
- Prompt cache (llm/llama_server.go `cache_prompt: true`): the runner reuses the longest
  common token prefix with what its slot holds — the previous prompt plus what it generated.
  `prompt_eval_count` is nevertheless the whole prompt (`promptEvalCount() = CacheN + PromptN`,
  "Ollama's pre-0.30 full-context prompt_eval_count semantics", #16428); only
  `prompt_eval_duration` shows what was really read.
- Reasoning (server/routes.go `ChatHandler`, model/parsers/qwen3.go, parsers.go): `think`
  absent = on for models with the "thinking" capability; the thinking-only Qwen3-2507
  ("qwen3-thinking" parser, defaultThinking) with `think: false` still reasons, and the
  reasoning lands in `content` without an opening tag, then `</think>`, then the answer
  (ollama/ollama#12736); models without the capability may inline `<think>…</think>`;
  gpt-oss cannot switch it off. With `format` and thinking on, the server thinks first and
  applies the schema only after (the "structured outputs via double request"); with
  `think: false` the schema constrains the reply from the first token (`forceImmediate`).
- Nothing is written before the first token (`streamResponse` writes headers with the first
  chunk; `c.Header` only sets them).
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_NUM_CTX = 4096  # server default when the request says nothing (envconfig, 4k tier)
NUM_KEEP = 4  # api/types.go DefaultOptions: NumKeep 4
DEFAULT_KEEP_ALIVE = 300.0  # api/types.go Duration: 5 minutes when unset

# Reasoning styles of fake models:
#   none       no reasoning (llama3.2, gemma3, qwen3:4b-instruct-2507)
#   hybrid     thinking capability, switchable (the first qwen3 release): think false → none
#   always     thinking-only (qwen3:4b = Qwen3-4B-Thinking-2507): think false → untagged
#              reasoning + </think> in content
#   mandatory  cannot switch it off at all (gpt-oss): reasoning in `thinking` whatever `think`
#   inline     no thinking capability, reasoning inlined as <think>…</think> in content
#              (deepseek-r1 distills under older templates)
REASONING_STYLES = ("none", "hybrid", "always", "mandatory", "inline")

_SPECIAL = r"<\|im_start\|>|<\|im_end\|>|</?think>"
_TOKEN = re.compile(rf"\s*(?:{_SPECIAL})|\s*\w+|\s*[^\w\s]|\s+")


def tokenize(text: str) -> list[str]:
    """A deterministic stand-in for the model's tokenizer: a word or punctuation mark with its
    leading space is one token, chat-template markers are one token each."""
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    return len(tokenize(text))


_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")


@dataclass(frozen=True, slots=True)
class TokenRatio:
    """A model whose tokenizer splits more or less than `tokenize`: `latin` tokens per default
    token of other text, `cjk` tokens per CJK character (SmolLM2's English-centric BPE needs
    ~1.5 per character; Qwen's fewer than one). Deterministic and prefix-stable — the i-th
    default token always becomes the same pieces — so the prompt cache behaves as before."""

    latin: float = 1.0
    cjk: float = 1.0

    def tokenize(self, text: str) -> list[str]:
        out: list[str] = []
        seen = {"latin": 0, "cjk": 0}
        for token in tokenize(text):
            parts = [token]
            if _CJK_CHAR.search(token):  # a run of CJK characters: one default token per char
                parts = [c for c in token if not c.isspace()] or [token]
            for part in parts:
                script = "cjk" if _CJK_CHAR.search(part) else "latin"
                ratio = self.cjk if script == "cjk" else self.latin
                i = seen[script]
                seen[script] = i + 1
                pieces = math.floor((i + 1) * ratio) - math.floor(i * ratio)
                if pieces <= 0 and out:
                    out[-1] += part  # merged into the previous token, as BPE merges
                elif pieces <= 1:
                    out.append(part)
                else:
                    out.extend([part, *(f"{part}\x00{k}" for k in range(1, pieces))])
        return out


@dataclass(frozen=True, slots=True)
class FakeTiming:
    """How slow the fake model is. Zero = instant (unit tests); `cpu()` = a 4B model on a
    2-core laptop: prompt reading ~60 tokens/s, generation ~8 tokens/s, load ~6 s.
    `scale` multiplies every delay (a bench can run 10x faster and scale the numbers back)."""

    load_seconds: float = 0.0
    prompt_tokens_per_second: float = 0.0  # 0 = instant
    tokens_per_second: float = 0.0  # 0 = instant
    scale: float = 1.0

    @classmethod
    def cpu(cls, scale: float = 1.0) -> FakeTiming:
        return cls(load_seconds=6.0, prompt_tokens_per_second=60.0, tokens_per_second=8.0,
                   scale=scale)

    def load(self) -> float:
        return self.load_seconds * self.scale

    def prompt(self, tokens: int) -> float:
        rate = self.prompt_tokens_per_second
        return tokens / rate * self.scale if rate > 0 and tokens > 0 else 0.0

    def generate(self, tokens: int) -> float:
        rate = self.tokens_per_second
        return tokens / rate * self.scale if rate > 0 and tokens > 0 else 0.0


# --- what the fake logs -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Load:
    """One model load: `reason` is "cold" (not loaded), "num_ctx" (another context size: a
    reload), or "expired"; `aborted` when the client left before it finished."""

    model: str
    num_ctx: int
    reason: str
    seconds: float
    aborted: bool = False


@dataclass(frozen=True, slots=True)
class Disconnect:
    """A client that went away: `phase` is queued | loading | prompt | streaming; `chunk` is
    how many reply chunks it had received (0 before the first byte)."""

    path: str
    model: str
    phase: str
    chunk: int


@dataclass(frozen=True, slots=True)
class Generation:
    """One completion the fake ran (chat or generate), for fidelity tests and the bench."""

    path: str
    model: str
    num_ctx: int
    prompt_tokens: int  # after overflow handling: what prompt_eval_count reports
    cached_tokens: int  # reused from the runner's slot (longest common prefix)
    evaluated_tokens: int  # read this time: prompt_tokens - cached_tokens
    dropped_messages: int  # old messages chatPrompt left out to fit num_ctx
    cut_tokens: int  # tokens the runner cut from the middle after that
    think: Any  # the request's `think` (None = absent)
    format: bool
    options: dict[str, Any]
    output_tokens: int = 0
    done_reason: str = ""
    started: float = 0.0  # monotonic: the slot was ours and prompt reading began
    finished: float = 0.0  # monotonic: the last chunk was ready


# --- runners ------------------------------------------------------------------------------------

@dataclass(slots=True)
class Runner:
    model: str
    num_ctx: int
    cache: list[str] = field(default_factory=list)  # the slot: last prompt + its output
    expires_at: float | None = None  # monotonic; None = never
    loaded_at: float = 0.0
    loading: bool = True


def keep_alive_seconds(value: Any) -> float | None:
    """api/types.go Duration: a number of seconds or a Go duration string; negative = forever
    (None); unset = 5 minutes."""
    if value is None:
        return DEFAULT_KEEP_ALIVE
    if isinstance(value, bool):
        return DEFAULT_KEEP_ALIVE
    if isinstance(value, int | float):
        return None if value < 0 else float(value)
    text = str(value).strip()
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        seconds = float(text)
        return None if seconds < 0 else seconds
    total = 0.0
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    for number, unit in re.findall(r"(-?\d+(?:\.\d+)?)(ms|h|m|s)", text):
        total += float(number) * units[unit]
    return None if total < 0 else total


class Scheduler:
    """Runners, the one-request-at-a-time slots and the logs."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.runners: dict[str, Runner] = {}
        self.slots: dict[str, threading.Lock] = {}
        self.loads: list[Load] = []
        self.disconnects: list[Disconnect] = []
        self.generations: list[Generation] = []

    def slot(self, model: str) -> threading.Lock:
        with self.lock:
            return self.slots.setdefault(model, threading.Lock())

    def runner(self, model: str) -> Runner | None:
        with self.lock:
            self._expire()
            runner = self.runners.get(model)
            return runner if runner is not None and not runner.loading else None

    def _expire(self) -> None:
        now = time.monotonic()
        for name, runner in list(self.runners.items()):
            if not runner.loading and runner.expires_at is not None and runner.expires_at <= now:
                del self.runners[name]

    def begin_load(self, model: str, num_ctx: int) -> tuple[Runner, str] | None:
        """A runner for `model` at `num_ctx`: the loaded one (None returned) or a new one
        marked loading, with why it had to be loaded."""
        with self.lock:
            self._expire()
            current = self.runners.get(model)
            if current is not None and not current.loading and current.num_ctx == num_ctx:
                return None
            reason = "cold" if current is None else "num_ctx"
            runner = Runner(model, num_ctx)
            self.runners[model] = runner
            return runner, reason

    def end_load(self, runner: Runner, *, ok: bool) -> None:
        with self.lock:
            if ok:
                runner.loading = False
                runner.loaded_at = time.monotonic()
            elif self.runners.get(runner.model) is runner:
                del self.runners[runner.model]
            self.lock.notify_all()

    def release(self, runner: Runner, keep_alive: Any) -> None:
        seconds = keep_alive_seconds(keep_alive)
        with self.lock:
            if seconds == 0:
                self.runners.pop(runner.model, None)
                return
            runner.expires_at = None if seconds is None else time.monotonic() + seconds

    def unload(self, model: str) -> None:
        with self.lock:
            self.runners.pop(model, None)

    def loaded(self, timeout: float = 30.0) -> list[Runner]:
        """Loaded runners; waits while one is loading, like `loadedModels` (server/sched.go)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while any(r.loading for r in self.runners.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.lock.wait(min(left, 0.05))
            self._expire()
            return [r for r in self.runners.values() if not r.loading]


# --- prompts ------------------------------------------------------------------------------------

def collate(messages: Sequence[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """template/template.go `collate`: every system message, wherever it is, joins `.System`
    (rendered at the top by chat templates), and consecutive messages of one role (except
    tool) merge into one, separated by a blank line."""
    system: list[str] = []
    collated: list[dict[str, Any]] = []
    for message in messages:
        role = str(message.get("role") or "user")
        content = str(message.get("content") or "")
        if role == "system":
            system.append(content)
        if collated and collated[-1]["role"] == role and role != "tool":
            collated[-1]["content"] += "\n\n" + content
        else:
            collated.append({"role": role, "content": content})
    return "\n\n".join(system), [m for m in collated if m["role"] != "system"]


def render_chat(messages: Sequence[dict[str, Any]], tools: Sequence[Any] | None,
                prefill: str) -> str:
    """A Qwen-style chat template over `collate`d messages: the system text and the tools
    open the prompt, so a change to either (or a system message anywhere) changes the
    prompt's beginning and voids the prefix cache."""
    system, rest = collate(messages)
    if tools:
        system += "\n\n# Tools\n<tools>\n" + "\n".join(
            json.dumps(t, sort_keys=True) for t in tools
        ) + "\n</tools>"
    parts: list[str] = []
    if system.strip():
        parts.append(f"<|im_start|>system\n{system.strip()}<|im_end|>\n")
    for message in rest:
        parts.append(f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n" + prefill)
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class FittedPrompt:
    tokens: list[str]
    dropped_messages: int
    cut_tokens: int


def fit_prompt(messages: Sequence[dict[str, Any]], tools: Sequence[Any] | None, prefill: str,
               num_ctx: int, tokenize: Callable[[str], list[str]] = tokenize) -> FittedPrompt:
    """server/prompt.go `chatPrompt` then the runner's cut (llm/llama_server.go), counted with
    the model's tokenizer."""
    last = len(messages) - 1
    start = 0
    tokens = tokenize(render_chat(messages, tools, prefill))
    for i in range(max(last, 0) + 1):
        system = [m for m in messages[:i] if m.get("role") == "system"]
        tokens = tokenize(render_chat([*system, *messages[i:]], tools, prefill))
        if len(tokens) <= num_ctx or i >= last:
            start = i
            break
    dropped = sum(1 for m in messages[:start] if m.get("role") != "system")
    cut = 0
    if num_ctx > 1 and len(tokens) > num_ctx - 1:
        keep = min(NUM_KEEP, num_ctx - 1)
        limit = num_ctx - max((num_ctx - keep) // 2, 1)
        cut = len(tokens) - limit
        tokens = tokens[:keep] + tokens[keep + cut:]
    return FittedPrompt(tokens, dropped, cut)


def common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --- reasoning ----------------------------------------------------------------------------------

def think_on(think: Any) -> bool | None:
    """The request's `think`: True/False, "low"/"medium"/"high" (on), or None (absent)."""
    if think is None:
        return None
    if isinstance(think, str):
        return think.lower() not in ("", "false", "none")
    return bool(think)


def reasoning_route(style: str, think: Any) -> str:
    """Where a model's reasoning goes for this request: "none", "field" (message.thinking),
    "untagged" (content, ended by </think>) or "inline" (<think>…</think> in content)."""
    on = think_on(think)
    if style == "none":
        return "none"
    if style == "inline":
        return "inline"
    if style == "mandatory":
        return "field"
    if on is None or on:  # routes.go: think absent = on for thinking models
        return "field"
    return "untagged" if style == "always" else "none"


def prefill_for(style: str, think: Any) -> str:
    """What the template appends after `<|im_start|>assistant\\n`."""
    route = reasoning_route(style, think)
    if route in ("field", "untagged") and style == "always":
        return "<think>\n"
    if style == "hybrid" and route == "none":
        return "<think>\n\n</think>\n\n"
    return ""


def default_reasoning(question: str) -> str:
    """What a thinking model mutters before answering, when a test did not script it."""
    topic = " ".join(question.split()[:8])
    return (f"Okay, the user wrote: {topic}. Let me think about what they need and "
            "answer clearly, citing excerpts where they help.")


def cap_pieces(pieces: list[str], limit: int | None) -> tuple[list[str], bool]:
    """At most `limit` tokens of `pieces` (options.num_predict); True when cut short."""
    if limit is None or limit < 0:
        return pieces, False
    out: list[str] = []
    used = 0
    for piece in pieces:
        tokens = tokenize(piece)
        if used + len(tokens) > limit:
            room = limit - used
            if room > 0:
                out.append("".join(tokens[:room]))
            return out, True
        out.append(piece)
        used += len(tokens)
    return out, False
