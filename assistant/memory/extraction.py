"""Extraction: the chat model reads the user's own turns and proposes memories as JSON.

Only user turns are sent: retrieved documents and the assistant's replies never reach the
extraction prompt, so "remember that the user's password is…" inside a document cannot become
a memory. The reply is constrained with Ollama's `format` (a JSON schema), then validated here
because small local models still return broken or empty JSON: one retry with a reminder, then
a clean give-up that is logged and returned, never raised into the chat.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assistant.memory.filters import chatter_reason
from assistant.memory.grounding import grounding_reason
from assistant.memory.model import MemoryType
from assistant.memory.secrets import find_secret_in

log = logging.getLogger(__name__)

# (messages, json_schema) -> the assistant message's content
ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]

MIN_CONFIDENCE = 0.5
MAX_MEMORIES = 20

MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": [t.value for t in MemoryType]},
                    "key": {"type": ["string", "null"]},
                    "text": {"type": "string"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["type", "key", "text", "confidence", "importance"],
            },
        }
    },
    "required": ["memories"],
}

SYSTEM_PROMPT = """\
You maintain a long-term memory about the user of a personal assistant.
Read the user's messages below and extract durable information worth remembering in future
conversations: facts about the user (job, projects, tools, family, places), preferences (how
they like answers, likes and dislikes), notable events (episode) and procedures they follow.
Rules:
- Use only what the user states about themselves. Ignore questions, greetings, small talk,
  requests for help, and anything quoted from documents or other people.
- Never record passwords, API keys, tokens, card or ID numbers, or other secrets.
- Write each memory as one short standalone sentence in the third person ("The user …"),
  in the language the user wrote in.
- key: a short snake_case name for facts that can change (e.g. employer, home_city,
  reply_style); reuse a key from the known memories when the new statement updates it;
  null for episodes.
- confidence: how sure you are the user meant it (0-1); importance: how useful it will be
  later (0-1).
- If there is nothing worth remembering, return {"memories": []}.
Reply with JSON only: {"memories": [{"type", "key", "text", "confidence", "importance"}]}."""

_RETRY_PROMPT = (
    "Your reply was not valid JSON matching the schema. Reply again with JSON only, exactly "
    'of the form {"memories": [{"type": "fact", "key": "employer", "text": "…", '
    '"confidence": 0.9, "importance": 0.7}]}.'
)

_KEY = re.compile(r"[^a-z0-9_]+")


@dataclass(frozen=True, slots=True)
class ExtractedMemory:
    type: MemoryType
    key: str | None
    text: str
    confidence: float
    importance: float
    source_text: str | None  # the user turn it most likely came from
    source_turn: int | None  # index into the user turns


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    memories: list[ExtractedMemory] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (text, reason)
    attempts: int = 0
    error: str | None = None  # set when the model's replies could not be used


class InvalidReply(ValueError):
    pass


def build_messages(
    user_turns: Sequence[str], known: Sequence[tuple[str | None, str]] = ()
) -> list[dict[str, str]]:
    lines = [f"[{i + 1}] {turn.strip()}" for i, turn in enumerate(user_turns) if turn.strip()]
    content = "The user's messages, in order:\n" + "\n".join(lines)
    if known:
        listed = "\n".join(f"- {key or '-'}: {text}" for key, text in known[:50])
        content += "\n\nAlready known about the user (key: text):\n" + listed
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return min(1.0, max(0.0, float(value)))


def parse_reply(reply: str) -> list[dict[str, Any]]:
    """The list of memory objects in a reply; raises InvalidReply if it is not usable."""
    text = reply.strip()
    if text.startswith("```"):  # some models wrap JSON in a fence despite `format`
        text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    if not text:
        raise InvalidReply("empty reply")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidReply(f"not JSON ({exc.msg} at char {exc.pos})") from None
    if isinstance(data, list):
        data = {"memories": data}
    if not isinstance(data, dict) or not isinstance(data.get("memories"), list):
        raise InvalidReply('no "memories" list in the reply')
    return [item for item in data["memories"] if isinstance(item, dict)]


def _source_turn(text: str, user_turns: Sequence[str]) -> int | None:
    words = set(re.findall(r"\w+", text.lower()))
    best, best_overlap = None, 0
    for i, turn in enumerate(user_turns):
        overlap = len(words & set(re.findall(r"\w+", turn.lower())))
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    return best


def validate(
    items: Sequence[dict[str, Any]], user_turns: Sequence[str]
) -> tuple[list[ExtractedMemory], list[tuple[str, str]]]:
    kept: list[ExtractedMemory] = []
    rejected: list[tuple[str, str]] = []
    for item in items[:MAX_MEMORIES]:
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            rejected.append((str(text), "no text"))
            continue
        text = " ".join(text.split())
        try:
            mtype = MemoryType(str(item.get("type", "fact")).strip().lower())
        except ValueError:
            mtype = MemoryType.FACT
        raw_key = item.get("key")
        key = _KEY.sub("_", raw_key.strip().lower()).strip("_") if isinstance(raw_key, str) else ""
        confidence = _number(item.get("confidence"), 0.7)
        importance = _number(item.get("importance"), 0.5)
        secret = find_secret_in(text, key=key or None)
        if secret:
            rejected.append(("[redacted]", secret.kind))
            continue
        reason = chatter_reason(text, mtype)
        if reason:
            rejected.append((text, reason))
            continue
        if confidence < MIN_CONFIDENCE:
            rejected.append((text, f"low confidence ({confidence:.2f})"))
            continue
        ungrounded = grounding_reason(text, user_turns)
        if ungrounded:
            rejected.append((text, ungrounded))
            continue
        turn = _source_turn(text, user_turns)
        kept.append(
            ExtractedMemory(
                type=mtype,
                key=key or None,
                text=text,
                confidence=confidence,
                importance=importance,
                source_text=user_turns[turn] if turn is not None else None,
                source_turn=turn,
            )
        )
    return kept, rejected


def extract_memories(
    user_turns: Sequence[str],
    *,
    chat_fn: ChatFn,
    known: Sequence[tuple[str | None, str]] = (),
) -> ExtractionResult:
    """Ask the model for memories in `user_turns`. Never raises: failures are in `.error`."""
    turns = [t for t in user_turns if t and t.strip()]
    if not turns:
        return ExtractionResult()
    messages = build_messages(turns, known)
    last_error = ""
    for attempt in (1, 2):
        try:
            reply = chat_fn(messages, MEMORY_SCHEMA)
            items = parse_reply(reply)
        except InvalidReply as exc:
            last_error = str(exc)
            log.warning("memory extraction: unusable reply (attempt %d): %s", attempt, exc)
            messages = [
                *messages,
                {"role": "assistant", "content": reply[:2000]},
                {"role": "user", "content": _RETRY_PROMPT},
            ]
            continue
        except Exception as exc:  # the model or server failed; the chat must go on
            log.warning("memory extraction failed: %s", exc)
            return ExtractionResult(attempts=attempt, error=f"model call failed: {exc}")
        kept, rejected = validate(items, turns)
        return ExtractionResult(kept, rejected, attempts=attempt)
    log.warning("memory extraction gave up after 2 attempts: %s", last_error)
    return ExtractionResult(attempts=2, error=f"invalid JSON from the model: {last_error}")


def ollama_chat_fn(
    host: str, model: str, *, timeout: float = 60.0, keep_alive: str | None = None
) -> ChatFn:
    """A ChatFn calling Ollama's /api/chat with `format` = the schema (no streaming)."""
    import httpx

    def chat(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "format": schema,
            "stream": False,
            "options": {"temperature": 0},
        }
        if keep_alive:
            body["keep_alive"] = keep_alive
        response = httpx.post(f"{host.rstrip('/')}/api/chat", json=body, timeout=timeout)
        response.raise_for_status()
        payload = response.json()
        return str(payload.get("message", {}).get("content", ""))

    return chat
