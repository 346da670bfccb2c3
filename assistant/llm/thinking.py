"""Reasoning is never answer text: telling a model's thinking apart from its answer.

A model's reasoning reaches us in one of three shapes:
- Ollama's separate `message.thinking` field (we ask for it with `think: true` when the model's
  capabilities include "thinking"): the engine routes it straight to `Thinking` events;
- inline `<think>…</think>` at the start of `content` (models Ollama cannot parse);
- untagged reasoning ended by `</think>` in `content`: a thinking-only model (the default
  `qwen3:4b` is Qwen3-4B-Thinking-2507) asked for `think: false` still reasons, without the
  opening tag, because its prompt already ends with `<think>` (ollama/ollama#12736).

`ReasoningSplitter` separates the two while streaming, never letting part of a tag through,
whatever the chunk boundaries. When it guessed wrong — answer text that turns out to be
reasoning (a `</think>` arrives), or text held as reasoning that was the answer (the reply ended
without `</think>`) — it says so with `Parts.replaced`, the full texts to show instead.
`strip_reasoning` does the same for a complete reply (background jobs, summaries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OPEN = "<think>"
CLOSE = "</think>"

ThinkSetting = Literal["auto", "on", "off"]
THINK_SETTINGS: tuple[str, ...] = ("auto", "on", "off")


@dataclass(frozen=True, slots=True)
class Parts:
    """What one chunk of `content` adds: reasoning and answer text, in that order."""

    thinking: str = ""
    answer: str = ""
    # (thinking, answer) so far when text already given out changes side; replaces both.
    replaced: tuple[str, str] | None = None


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper beginning of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ReasoningSplitter:
    """Streams `content` deltas into (thinking, answer).

    `untagged=True` when the reply is expected to open with reasoning without a tag (a
    thinking-only model sent `think: false`): everything before `</think>` is reasoning. With
    `untagged=False` a leading `<think>…</think>` is reasoning, and a `</think>` later in an
    answer that never opened one moves the answer so far to the reasoning (`replaced`).
    """

    def __init__(self, *, untagged: bool = False) -> None:
        self.untagged = untagged
        self._state = "start"  # start → thinking → after → answer
        self._held = ""  # text kept back: maybe the start of a tag, or leading whitespace
        self._tagged = False  # the reasoning was opened by <think>
        self._closed = False  # a reasoning block ended
        self.thinking = ""
        self.answer = ""

    def feed(self, text: str) -> Parts:
        thinking_before, answer_before = len(self.thinking), len(self.answer)
        replaced = self._consume(text)
        if replaced is not None:
            return Parts(replaced=replaced)
        return Parts(self.thinking[thinking_before:], self.answer[answer_before:])

    def finish(self, *, cut_short: bool = False) -> Parts:
        """The reply ended (`cut_short`: at the length limit). Releases held text; a reply held
        as untagged reasoning that never reached `</think>` was the answer after all — unless
        it was cut short, when it is all reasoning and there is no answer."""
        thinking_before, answer_before = len(self.thinking), len(self.answer)
        held, self._held = self._held, ""
        if self._state == "start":
            self.answer += held  # whitespace or an unfinished "<thi…": not a tag after all
        elif self._state == "thinking":
            if self.untagged and not self._tagged and not cut_short:
                self.answer = self.thinking + held
                self.thinking = ""
                self._state = "answer"
                return Parts(replaced=(self.thinking, self.answer))
            self.thinking += held
        elif self._state == "answer":
            self.answer += held
        return Parts(self.thinking[thinking_before:], self.answer[answer_before:])

    # --- the state machine -------------------------------------------------------------------

    def _consume(self, text: str) -> tuple[str, str] | None:
        buffer = self._held + text
        self._held = ""
        while buffer:
            if self._state == "start":
                stripped = buffer.lstrip()
                if not stripped:
                    self._held = buffer
                    return None
                if stripped.startswith(OPEN):
                    self._state, self._tagged = "thinking", True
                    buffer = stripped[len(OPEN):].lstrip()
                    continue
                if OPEN.startswith(stripped):
                    self._held = buffer  # could still become "<think>"
                    return None
                self._state = "thinking" if self.untagged else "answer"
                buffer = stripped if self.untagged else buffer
                continue
            if self._state == "thinking":
                if not self.thinking:
                    buffer = buffer.lstrip()  # the newline after <think>
                    if not buffer:
                        return None
                end = buffer.find(CLOSE)
                if end == -1:
                    keep = _partial_suffix(buffer, CLOSE)
                    self.thinking += buffer[:len(buffer) - keep]
                    self._held = buffer[len(buffer) - keep:]
                    return None
                self.thinking += buffer[:end]
                buffer = buffer[end + len(CLOSE):]
                self._state, self._closed = "after", True
                continue
            if self._state == "after":  # the blank lines between reasoning and answer
                buffer = buffer.lstrip()
                if buffer:
                    self._state = "answer"
                continue
            # answer
            if self._closed or OPEN in self.answer + buffer:
                self.answer += buffer  # after real reasoning, or an answer about the tags
                return None
            end = buffer.find(CLOSE)
            if end != -1:  # untagged reasoning we did not expect: it was not the answer
                self.thinking += self.answer + buffer[:end]
                self.answer = ""
                rest = buffer[end + len(CLOSE):]
                self._state, self._closed = "after", True
                self._consume(rest)
                return (self.thinking, self.answer)
            keep = _partial_suffix(buffer, CLOSE)
            self.answer += buffer[:len(buffer) - keep]
            self._held = buffer[len(buffer) - keep:]
            return None
        return None


def strip_reasoning(text: str) -> str:
    """The answer part of a complete reply: what follows the last `</think>` (tagged or
    untagged reasoning), else the reply without a leading `<think>` block; "" when the reply
    is an unfinished reasoning (cut off before `</think>`)."""
    if CLOSE in text:
        return text.rsplit(CLOSE, 1)[1].strip()
    stripped = text.lstrip()
    if stripped.startswith(OPEN):
        return ""
    return text.strip()


def think_value(setting: str, capabilities: tuple[str, ...]) -> bool | None:
    """The `think` to send: None (leave it out) for models without the "thinking" capability —
    Ollama refuses `think: true` for them and `false` means nothing — and for servers that
    report no capabilities; otherwise true unless the setting is "off". Sent explicitly even
    when Ollama's default would do: servers before 0.12.4 default to off."""
    if "thinking" not in capabilities:
        return None
    return setting != "off"
