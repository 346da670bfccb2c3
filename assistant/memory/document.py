"""The text a memory is searched by: its words, plus context that makes short turns findable.

A conversational episode such as "Yes, it was yesterday!" means nothing alone; indexed with the
neighbouring turns of its conversation and its date spelled out ("8 May 2023", "May 2023"), it
can be found by "When did Caroline go to the support group?". The extra text is used only for
search; it is never shown, exported or given to the chat model.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from assistant.memory.model import MemoryType

# Neighbouring turns folded into an episode's search text, on each side.
CONTEXT_BEFORE = 2
CONTEXT_AFTER = 1
_CONTEXT_CHARS = 600
# The embedding sees only the head of the search text: the memory's own words, its key and
# date, then context if any room is left; the keyword index keeps all of it. Measured on LoCoMo
# (bench/memory.py, 10 conversations, 1536 questions): with the full text recall@5/@10 were
# 0.661/0.751 at 27 imports/s; cut at 350 characters 0.675/0.757 at 46/s; at 220, 0.673/0.758
# at 53/s. Neighbouring turns help through BM25; in the embedding they only cost time.
EMBED_CHARS = 220


def date_words(seconds: float | None) -> str:
    if seconds is None:
        return ""
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):  # beyond what datetime can hold
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
    text: str, *, type: MemoryType, key: str | None, context: str, created_at: float | None
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


def embedding_text(
    text: str, *, type: MemoryType, key: str | None, context: str, created_at: float | None
) -> str:
    """What the embedding model reads: `search_text` cut after EMBED_CHARS characters (at a
    word boundary), never inside the memory's own text, key or date."""
    full = search_text(text, type=type, key=key, context=context, created_at=created_at)
    if len(full) <= EMBED_CHARS or not context:
        return full
    head = len(full) - len(context)  # everything before the context: kept whole
    if head >= EMBED_CHARS:
        return full[:head].rstrip()
    cut = full.rfind(" ", head, EMBED_CHARS + 1)
    return full[: cut if cut > head else EMBED_CHARS].rstrip()
