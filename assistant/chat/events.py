"""Typed events of one turn, streamed from the engine to the caller (TUI worker or CLI).

Order: `Retrieved` once (what the answer will be based on); `Waiting` about once a second
while Ollama loads the model and reads the prompt (it sends nothing meanwhile); then
`Thinking`, `ToolCalled` and `Token` as they come (an `AnswerReplaced` when text already shown
changes side); then exactly one of `Done` (complete or interrupted) or `Failed`.

The model's reasoning only ever travels in `Thinking` (and `AnswerReplaced.thinking`): it is
shown apart (dim, collapsed), never stored as the answer, never cited, never sent back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from assistant.llm.errors import ChatError
from assistant.sessions.turn import MemoryItem, Recalled, Source, ToolUse, Turn

if TYPE_CHECKING:
    from assistant.timerange import TimeRange


@dataclass(frozen=True, slots=True)
class Retrieved:
    sources: tuple[Source, ...]  # numbered as in the prompt: [n] in the answer means sources[n-1]
    memories: tuple[MemoryItem, ...]
    low_confidence: bool
    knowledge_used: bool  # False when knowledge search was off for this turn
    memory_used: bool
    log_id: int | None = None  # retrieval-log entry, for 👍/👎 feedback
    noted: MemoryItem | None = None  # stored from an explicit "remember that …" in the message
    empty_index: bool = False  # nothing is indexed yet (the UI can suggest `brain index`)
    warnings: tuple[str, ...] = ()  # retrieval problems to show (e.g. vectors missing)
    # Earlier conversations recalled for the question, numbered as in the prompt: [c<n>] in
    # the answer means the one with that n (item: date, session title, question, answer).
    conversations: tuple[Recalled, ...] = ()
    conversations_used: bool = False  # False when conversation recall was off or unavailable
    # The dates a phrase of the question named ("last week", "上周"), for the status line;
    # `time_range_applied` False: no conversation was from then, so every date was searched.
    time_range: TimeRange | None = None
    time_range_applied: bool = True


@dataclass(frozen=True, slots=True)
class Token:
    text: str


WaitPhase = Literal["loading", "reading"]


@dataclass(frozen=True, slots=True)
class Waiting:
    """Nothing from Ollama yet: it is loading the model ("loading"; `/api/ps` does not list it
    at this context size, or does not answer while it loads) or reading the prompt
    ("reading": about `prompt_tokens` tokens it has not cached). Emitted about once a second
    until the first token; the UI shows e.g. "loading qwen3:4b… 12 s" / "reading 3,200
    tokens… 41 s"."""

    phase: WaitPhase
    seconds: float  # since the request was sent
    model: str
    prompt_tokens: int  # estimate of the tokens Ollama has to read (not in its cache)
    limit: float  # ollama.first_token_timeout: the wait fails after this many seconds

    def describe(self) -> str:
        """What the user sees meanwhile (the TUI's answer placeholder, `brain ask`'s stderr)."""
        if self.phase == "loading":
            return f"loading {self.model}… {self.seconds:.0f} s"
        return f"reading {self.prompt_tokens:,} prompt tokens… {self.seconds:.0f} s"


def read_note(timings: Mapping[str, Any]) -> str:
    """After the reply, what the server really read of the prompt — the counterpart of the
    estimate `Waiting` showed ("reading 2,094 prompt tokens…" was 1,190 real new tokens on a
    real model): "read 1,190 new prompt tokens", "≈" when only the whole prompt's count is
    real (the engine's prompt_read_tokens / prompt_read_approx); "" when unknown."""
    read = timings.get("prompt_read_tokens")
    if not isinstance(read, int) or isinstance(read, bool):
        return ""
    about = "≈" if timings.get("prompt_read_approx") else ""
    return f"read {about}{read:,} new prompt tokens"


@dataclass(frozen=True, slots=True)
class Thinking:
    """A piece of the model's reasoning (a delta). `seconds`: since the reasoning began; the
    UI shows a dim, collapsed "thinking… (N s)" block above the answer."""

    text: str
    seconds: float


@dataclass(frozen=True, slots=True)
class AnswerReplaced:
    """Text already shown changed side: the answer so far was untagged reasoning (a
    `</think>` arrived), or what was held as reasoning was the answer. Replace both."""

    thinking: str
    answer: str


@dataclass(frozen=True, slots=True)
class ToolCalled:
    tool: ToolUse
    sources: tuple[Source, ...] = ()  # new numbered sources the tool added, if any
    conversations: tuple[Recalled, ...] = ()  # earlier conversations it added, [c<n>]


@dataclass(frozen=True, slots=True)
class Done:
    turn: Turn  # status "complete" or "interrupted"; citations marked; stored

    @property
    def interrupted(self) -> bool:
        return self.turn.status == "interrupted"


@dataclass(frozen=True, slots=True)
class Failed:
    error: ChatError
    partial: str  # what was streamed before the failure (kept in the stored turn)
    turn: Turn | None  # the stored failed/interrupted turn, for retry

    @property
    def retryable(self) -> bool:
        return self.error.retryable


ChatEvent = Retrieved | Waiting | Thinking | Token | AnswerReplaced | ToolCalled | Done | Failed

# How a turn's stages hand their events to whoever shows them (the TUI, the CLI).
Emit = Callable[[ChatEvent], None]
