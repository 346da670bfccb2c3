"""The text a memory is searched by: its words, plus context that makes short turns findable.

A conversational episode such as "Yes, it was yesterday!" means nothing alone; indexed with the
neighbouring turns of its conversation and its date spelled out ("8 May 2023", "May 2023"), it
can be found by "When did Caroline go to the support group?". The extra text is used only for
search; it is never shown, exported or given to the chat model.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.memory.clock import parse_iso
from assistant.memory.model import MemoryType

# Neighbouring turns folded into an episode's search text, on each side.
CONTEXT_BEFORE = 2
CONTEXT_AFTER = 1
_CONTEXT_CHARS = 600


def date_words(iso: str | None) -> str:
    if not iso:
        return ""
    try:
        moment = parse_iso(iso)
    except ValueError:
        return ""
    return f"{moment.day} {moment:%B} {moment.year}, {moment:%A}, {moment:%B %Y}"


def episode_context(texts: Sequence[str], index: int) -> str:
    """Neighbouring turns of texts[index] within one conversation, nearest first."""
    parts: list[str] = []
    for offset in range(1, max(CONTEXT_BEFORE, CONTEXT_AFTER) + 1):
        if offset <= CONTEXT_BEFORE and index - offset >= 0:
            parts.append(texts[index - offset])
        if offset <= CONTEXT_AFTER and index + offset < len(texts):
            parts.append(texts[index + offset])
    context = " | ".join(parts)
    return context[:_CONTEXT_CHARS]


def search_text(
    text: str, *, type: MemoryType, key: str | None, context: str, created_at: str | None
) -> str:
    """One string for both the keyword index and the embedding."""
    parts = [text]
    if context:
        # Said twice, a memory's own words outweigh its neighbours' in both BM25 and the
        # embedding, so the turn itself ranks above the turns around it.
        parts.append(text)
    if key:
        parts.append(key.replace("_", " "))
    if type is MemoryType.EPISODE:
        when = date_words(created_at)
        if when:
            parts.append(f"({when})")
    if context:
        parts.append(context)
    return "\n".join(parts)
