"""Explicit requests: "remember that …", "please remember: …", "记住…"."""

from __future__ import annotations

import re

_EXPLICIT = (
    re.compile(
        r"(?is)^\s*(?:(?:please|pls|hey|ok(?:ay)?)[\s,]+)?(?:can you\s+|could you\s+)?"
        r"(?:remember|don'?t forget|do not forget|keep in mind|make a note|note)"
        r"(?:\s+(?:that|this))?\s*[:,：-]?\s*(?P<body>.+?)\s*[.!。！]*\s*$"
    ),
    re.compile(r"(?s)^\s*(?:请|帮我|请帮我|你要)?(?:记住|记一下|记得)\s*[:：,，]?\s*(?P<body>.+?)\s*[。！!.]*\s*$"),
)


def explicit_memory(utterance: str) -> str | None:
    """The text to remember if the user explicitly asked to remember something, else None.

    "Remember that I prefer metric units." → "I prefer metric units."
    """
    if utterance.strip().endswith(("?", "？")):
        return None  # "remember when we…?" is a question, not a request
    for pattern in _EXPLICIT:
        match = pattern.match(utterance)
        if match:
            body = match.group("body").strip().rstrip("?？")
            if len(body) < 2 or body.lower() in {"this", "that", "it"}:
                return None
            if body[-1] not in ".!。！":
                body += "。" if any("\u4e00" <= c <= "\u9fff" for c in body[-1]) else "."
            return body[0].upper() + body[1:]
    return None
