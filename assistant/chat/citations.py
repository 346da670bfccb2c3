"""Map the [n] citations an answer actually uses back to the numbered sources it was given."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from assistant.chat.turn import Source

# `[2]`, `[1, 3]`, `[2-4]`, `[2–4]`; not `items[1]` (indexing in prose or code) nor `[1](url)`.
_CITATION = re.compile(r"(?<![\w])\[(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\](?!\()")
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE = re.compile(r"`[^`\n]*`")
_MAX_RANGE = 50


def cited_numbers(answer: str) -> list[int]:
    """Numbers cited in `answer`, in order of first use; code spans are ignored."""
    text = _INLINE.sub(" ", _FENCED.sub(" ", answer))
    seen: dict[int, None] = {}
    for match in _CITATION.finditer(text):
        for part in re.split(r"\s*[,;]\s*", match.group(1)):
            bounds = re.split(r"\s*[–-]\s*", part)
            numbers: Iterable[int]
            if len(bounds) == 2:
                lo, hi = int(bounds[0]), int(bounds[1])
                numbers = range(lo, hi + 1) if 0 < hi - lo <= _MAX_RANGE else (lo, hi)
            else:
                numbers = (int(bounds[0]),)
            for n in numbers:
                seen.setdefault(n, None)
    return list(seen)


def mark_cited(sources: Sequence[Source], answer: str) -> tuple[tuple[Source, ...], list[int]]:
    """Sources with `cited` set for those the answer uses, and cited numbers that match none
    (the model invented them)."""
    used = cited_numbers(answer)
    known = {s.n for s in sources}
    marked = tuple(replace(s, cited=s.n in used) for s in sources)
    return marked, [n for n in used if n not in known]


def strip_citations(answer: str) -> str:
    """`answer` without its [n] markers (code spans untouched). Earlier answers in the prompt's
    history are shown this way: their numbers referred to that turn's sources, and the model
    would otherwise reuse them for this turn's different [n]."""
    spans = [(m.start(), m.end()) for m in _FENCED.finditer(answer)]
    spans += [(m.start(), m.end()) for m in _INLINE.finditer(answer)]

    def keep(match: re.Match[str]) -> str:
        inside = any(a <= match.start() < b for a, b in spans)
        return match.group(0) if inside else ""

    return re.sub(r" ?" + _CITATION.pattern, keep, answer)
