"""Typed events of one turn, streamed from the engine to the caller (TUI worker or CLI).

Order: `Retrieved` once (what the answer will be based on), then `ToolCalled`s and `Token`s as
they come, then exactly one of `Done` (complete or interrupted) or `Failed`.
"""

from __future__ import annotations

from dataclasses import dataclass

from assistant.chat.errors import ChatError
from assistant.chat.turn import MemoryItem, Source, ToolUse, Turn


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


@dataclass(frozen=True, slots=True)
class Token:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCalled:
    tool: ToolUse
    sources: tuple[Source, ...] = ()  # new numbered sources the tool added, if any


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


ChatEvent = Retrieved | Token | ToolCalled | Done | Failed
