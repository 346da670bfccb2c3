"""Extraction: the chat model reads the user's own turns and proposes memories as JSON.

Only user turns are sent: retrieved documents and the assistant's replies never reach the
extraction prompt, so "remember that the user's password is…" inside a document cannot become
a memory. The reply is constrained with Ollama's `format` (a JSON schema), then validated here
because small local models still return broken or empty JSON: one retry with a reminder, then
a clean give-up that is logged and returned, never raised into the chat.

Cheap on a laptop CPU: the turns go in batches of at most `BATCH_TOKENS`, the reply is capped
(`NUM_PREDICT`, `maxItems`), and `think: false` with a schema makes even a thinking-only model
write JSON from its first token (server/routes.go applies the format at once then). The schema
puts `text` first — constrained decoding writes properties in order, so the memory is written
before it is classified — and asks for the number of the turn it came from.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from assistant.llm.thinking import strip_reasoning
from assistant.llm.tokens import count_tokens
from assistant.memory.filters import chatter_reason
from assistant.memory.grounding import grounding_reason
from assistant.memory.model import MemoryType
from assistant.memory.restate import in_third_person
from assistant.memory.secrets import find_secret_in
from assistant.memory.statement_rule import RULE_CONFIDENCE, self_statements

log = logging.getLogger(__name__)

# (messages, json_schema) -> the assistant message's content
ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]

MIN_CONFIDENCE = 0.5
# For a memory whose score is missing or out of 0–1: the model did not say how sure it is, so
# the memory is neither dropped nor trusted more than one it rated; grounding still decides.
DEFAULT_CONFIDENCE = 0.7
DEFAULT_IMPORTANCE = 0.5
MAX_MEMORIES = 20
MAX_ITEMS = 8  # per batch; the schema's maxItems
BATCH_TOKENS = 1500  # user turns per request, at most (the chat model's num_ctx is ≥ 2048)
NUM_PREDICT = 1024  # reply tokens: MAX_ITEMS memories of ~60 tokens and the JSON around them

MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": MAX_ITEMS,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "type": {"type": "string", "enum": [t.value for t in MemoryType]},
                    "turn": {"type": "integer", "minimum": 1},
                    "key": {"type": ["string", "null"]},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1},
                },
                "required": ["text", "type", "turn", "key", "confidence", "importance"],
            },
        }
    },
    "required": ["memories"],
}

# No example statements: a small model copies an example's content into the memory it writes
# ("works as a baker in Porto", Porto from the example, for "I work at a bakery"). The
# instructions name kinds of things, never an instance; grounding (memory/grounding.py) rejects
# a memory whose words are mostly not the user's or with a name or number the user never said.
SYSTEM_PROMPT = f"""\
You keep a long-term memory about the user of a personal assistant.
Read the user's numbered messages. Write down each thing the user says about themselves that
will still matter in later conversations: who they are, their work, family, home, plans, what
they like or dislike, how they want to be answered, routines they follow, notable events.
Skip questions, greetings, requests for help, passing moods, and anything about documents or
other people. Never record passwords, API keys, tokens, card or ID numbers, or other secrets.

For each memory:
- text: the user's own statement as one short sentence about "The user" (in Chinese "用户"),
  in the language of the message, with the user's own words; add nothing they did not say;
- type: fact (who the user is, what they have or do), preference (likes, dislikes, how they
  want things), episode (a dated event in their life) or procedure (a routine they follow);
- turn: the number in brackets of the message it comes from;
- key: a short snake_case name when the fact can change later, reusing a key from the known
  memories when the message updates it; null otherwise;
- confidence: a number between 0 and 1, how sure you are the user meant it;
- importance: a number between 0 and 1, how useful it will be later.
At most {MAX_ITEMS} memories. If the messages say nothing lasting about the user, return
{{"memories": []}}. Reply with JSON only."""

_RETRY_PROMPT = (
    "Your reply was not valid JSON matching the schema. Reply again with JSON only: an "
    'object {"memories": [...]} whose items have text, type, turn, key, confidence and '
    "importance."
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
    by_rule: bool = False  # the statement rule wrote it (memory/statement_rule.py), not the model


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
    """A 0–1 score from the model, or `default` when it gave none usable. Out of range is
    unusable, never clamped: llama.cpp's grammar (which Ollama uses for `format`) does not
    enforce `minimum`/`maximum`, and SmolLM2 answers `confidence: 3` — a 1–5 scale, a
    percentage or noise, nothing that says "certain"."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    number = float(value)
    return number if 0.0 <= number <= 1.0 else default  # NaN fails both comparisons


def json_text(reply: str) -> str:
    """The JSON in a model's reply: reasoning (tagged, or untagged up to `</think>`) and code
    fences removed — a thinking model may reason before the JSON when the schema is not
    applied from the first token."""
    text = strip_reasoning(reply)
    if text.startswith("```"):  # some models wrap JSON in a fence despite `format`
        text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text)
    return text


def parse_reply(reply: str) -> list[dict[str, Any]]:
    """The list of memory objects in a reply; raises InvalidReply if it is not usable."""
    text = json_text(reply)
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


def _turn_index(value: Any, count: int) -> int | None:
    """The 0-based index of the model's 1-based `turn` number, None when unusable."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    index = int(value) - 1
    return index if 0 <= index < count else None


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
        # The form every memory is stored in, whatever person the model wrote in.
        text = in_third_person(" ".join(text.split()))
        try:
            mtype = MemoryType(str(item.get("type", "fact")).strip().lower())
        except ValueError:
            mtype = MemoryType.FACT
        raw_key = item.get("key")
        key = _KEY.sub("_", raw_key.strip().lower()).strip("_") if isinstance(raw_key, str) else ""
        confidence = _number(item.get("confidence"), DEFAULT_CONFIDENCE)
        importance = _number(item.get("importance"), DEFAULT_IMPORTANCE)
        # The key as the model wrote it (case is part of a token's shape), and the user's turns:
        # a value they gave as a password is refused whatever words the memory wraps it in.
        given_key = raw_key.strip() if isinstance(raw_key, str) and raw_key.strip() else None
        secret = find_secret_in(text, key=given_key, said=user_turns)
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
        turn = _turn_index(item.get("turn"), len(user_turns))
        if turn is None:  # no usable number: the turn sharing most words
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


def batches(turns: Sequence[str], max_tokens: int = BATCH_TOKENS,
            counter: Callable[[str], int] | None = None) -> list[list[int]]:
    """Indices of `turns` in consecutive groups of at most `max_tokens` (a longer turn is a
    group of its own: the model's own context limit still protects it)."""
    if counter is None:
        counter = count_tokens
    groups: list[list[int]] = []
    used = 0
    for i, turn in enumerate(turns):
        cost = counter(turn)
        if groups and used + cost <= max_tokens:
            groups[-1].append(i)
            used += cost
        else:
            groups.append([i])
            used = cost
    return groups


def extract_memories(
    user_turns: Sequence[str],
    *,
    chat_fn: ChatFn,
    known: Sequence[tuple[str | None, str]] = (),
    max_tokens: int = BATCH_TOKENS,
) -> ExtractionResult:
    """Ask the model for memories in `user_turns`, one request per batch of at most
    `max_tokens`. Never raises: failures are in `.error` (with what earlier batches found)."""
    turns = [t for t in user_turns if t and t.strip()]
    if not turns:
        return ExtractionResult()
    result = ExtractionResult()
    for group in batches(turns, max_tokens):
        part = _extract_batch([turns[i] for i in group], chat_fn=chat_fn, known=known)
        result.memories.extend(
            replace(m, source_turn=group[m.source_turn]) if m.source_turn is not None else m
            for m in part.memories
        )
        result.rejected.extend(part.rejected)
        result = replace(result, attempts=result.attempts + part.attempts)
        if part.error:
            return replace(result, error=part.error)
    return result


def _extract_batch(
    turns: list[str], *, chat_fn: ChatFn, known: Sequence[tuple[str | None, str]]
) -> ExtractionResult:
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
        # The model or server failed; the chat must go on. `chat_fn` is the caller's model
        # call, whose failures (a ChatError, httpx's, the chat's JobCancelled when a question
        # is sent) are foreseen and common: one line each, no traceback.
        except Exception as exc:
            log.warning("memory extraction failed: %s", exc)
            return ExtractionResult(attempts=attempt, error=f"model call failed: {exc}")
        kept, rejected = validate(items, turns)
        return _with_backstop(ExtractionResult(kept, rejected, attempts=attempt), turns)
    log.warning("memory extraction gave up after 2 attempts: %s", last_error)
    return _with_backstop(ExtractionResult(
        attempts=2, error=f"invalid JSON from the model: {last_error}"), turns)


def _with_backstop(result: ExtractionResult, turns: Sequence[str]) -> ExtractionResult:
    """`result` plus what the statement rule finds in each turn the model left without a
    memory (memory/statement_rule.py), validated like the model's: secrets, chatter and
    grounding. Only after the model answered (a reply, usable or not): a failed call is an
    extraction that did not happen, retried with the session. A turn saying word for word
    what a covered turn said is covered too: the model grounds its memory in one of them, and
    the same message sent twice (a re-asked question, an `ask -c` after a killed run) is one
    statement, not a second chance for the rule."""
    def said(turn: str) -> str:
        return " ".join(turn.casefold().split())

    covered = {m.source_turn for m in result.memories}
    covered_words = {said(turns[i]) for i in covered if i is not None and 0 <= i < len(turns)}
    items = [
        {"text": text, "type": mtype.value, "turn": i + 1, "key": None,
         "confidence": RULE_CONFIDENCE, "importance": DEFAULT_IMPORTANCE}
        for i, turn in enumerate(turns) if i not in covered and said(turn) not in covered_words
        for text, mtype in self_statements(turn)
    ]
    if not items:
        return result
    kept, rejected = validate(items, turns)
    return replace(result, memories=[*result.memories,
                                     *(replace(m, by_rule=True) for m in kept)],
                   rejected=[*result.rejected, *rejected])

