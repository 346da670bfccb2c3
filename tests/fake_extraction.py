"""What the fake model writes, unscripted, for a memory extraction request.

A real model asked to extract memories from "I moved to Lisbon last month" returns one. A fake
that answered every extraction with `{"memories": []}` made a broken pipeline look like a quiet
conversation, so the default reply is a realistic non-empty extraction: the first clear
first-person statement of the request's user turns ("I …", "I'm …", "My …", "我…"), restated in
the third person the way the prompt asks ("The user …", "用户…"). Turns with no such statement
give no memory, as they would from a model that follows the instructions.

Deliberately independent of the app's own rewriting (assistant/memory/restate.py): a fake that
reused it could not catch its bugs.
"""

from __future__ import annotations

import re
from typing import Any

_NUMBERED = re.compile(r"^\[(\d+)\]\s*(.+)$", re.M)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]?")
_IRREGULAR = {"am": "is", "'m": "is", "have": "has", "'ve": "has", "do": "does",
              "go": "goes", "was": "was", "'d": "would", "'ll": "will"}
_PAST = {"went", "got", "had", "made", "took", "bought", "left", "met", "began", "became",
         "grew", "came", "saw", "sold", "spent"}
_MODAL = {"can", "could", "will", "would", "should", "must", "might", "may", "don't",
          "didn't", "can't", "won't", "usually", "always", "never", "often", "also"}
_PREFERENCE = re.compile(r"\b(prefer|like|love|hate|dislike|enjoy)\b|喜欢|讨厌|偏好", re.I)


def is_extraction(schema: Any) -> bool:
    """The app's extraction schema: an object whose `memories` are objects with a `text`."""
    if not isinstance(schema, dict):
        return False
    memories = schema.get("properties", {}).get("memories", {})
    items = memories.get("items", {}) if isinstance(memories, dict) else {}
    return isinstance(items, dict) and "text" in items.get("properties", {})


def user_turns(messages: list[dict[str, Any]]) -> list[str]:
    """The numbered user turns of the last user message ("[1] …"), or that message whole."""
    last = next((str(m.get("content") or "") for m in reversed(messages)
                 if m.get("role") == "user"), "")
    numbered = [text for _, text in _NUMBERED.findall(last)]
    return numbered or ([last] if last.strip() else [])


def _third_person_verb(verb: str) -> str:
    lower = verb.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _MODAL or lower in _PAST or lower.endswith("ed"):
        return lower
    if lower.endswith(("s", "sh", "ch", "x", "o")):
        return verb + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def restate(sentence: str) -> str | None:
    """A first-person statement in the third person, or None when it is not one."""
    if sentence.strip().endswith(("?", "？")):
        return None
    text = sentence.strip().rstrip(".!。！").replace("\u2019", "'")
    if not text:
        return None
    if text.startswith("我") and not text.startswith("我们"):
        return "用户" + text[1:].replace("我的", "用户的") + "。"
    if re.match(r"(?i)^my\s", text):
        return f"The user's {text[3:].strip()}."
    match = re.match(r"(?i)^i(?:(?P<contr>'m|'ve|'d|'ll)|\s+(?P<verb>[\w']+))(?P<rest>.*)$", text)
    if match is None:
        return None
    rest = re.sub(r"(?i)\bmy\b", "their", match.group("rest")).strip()
    verb = match.group("contr") or match.group("verb")
    return f"The user {_third_person_verb(verb)} {rest}".rstrip() + "."


def default_extraction(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """{"memories": [...]}: at most one memory, from the first first-person statement."""
    for number, turn in enumerate(user_turns(messages), start=1):
        for sentence in _SENTENCE.findall(turn):
            text = restate(sentence)
            if text is None:
                continue
            kind = "preference" if _PREFERENCE.search(sentence) else "fact"
            return {"memories": [{"text": text, "type": kind, "turn": number, "key": None,
                                  "confidence": 0.9, "importance": 0.6}]}
    return {"memories": []}
