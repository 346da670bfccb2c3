"""Map the citations an answer actually uses back to what it was given: `[n]` to the
numbered sources (excerpts of the user's files), `[c<n>]` to the earlier conversations."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from assistant.sessions.turn import Recalled, Source

# `[2]`, `[1, 3]`, `[2-4]`, `[2–4]`; not `items[1]` (indexing in prose or code) nor `[1](url)`.
_CITATION = re.compile(r"(?<![\w])\[(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\](?!\()")
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE = re.compile(r"`[^`\n]*`")
_MAX_RANGE = 50
# `[c1]`, `[c1, c3]`, `[c1][c2]`, `[c1-c3]`, `[C2]`; not `[c1](url)`.
_CONVERSATION = re.compile(
    r"(?<![\w])\[[cC](\d{1,3}(?:\s*[,;–-]\s*[cC]?\d{1,3})*)\](?!\()"
)


def _code_free(answer: str) -> str:
    return _INLINE.sub(" ", _FENCED.sub(" ", answer))


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group):
        bounds = [b.lstrip("cC") for b in re.split(r"\s*[–-]\s*", part)]
        if len(bounds) == 2:
            lo, hi = int(bounds[0]), int(bounds[1])
            out += range(lo, hi + 1) if 0 < hi - lo <= _MAX_RANGE else (lo, hi)
        else:
            out.append(int(bounds[0]))
    return out


def cited_numbers(answer: str) -> list[int]:
    """Numbers cited in `answer`, in order of first use; code spans are ignored."""
    seen: dict[int, None] = {}
    for match in _CITATION.finditer(_code_free(answer)):
        for n in _numbers(match.group(1)):
            seen.setdefault(n, None)
    return list(seen)


def cited_conversations(answer: str) -> list[int]:
    """The n of every `[c<n>]` cited in `answer`, in order of first use (code ignored)."""
    seen: dict[int, None] = {}
    for match in _CONVERSATION.finditer(_code_free(answer)):
        for n in _numbers(match.group(1)):
            seen.setdefault(n, None)
    return list(seen)


def mark_cited(sources: Sequence[Source], answer: str) -> tuple[tuple[Source, ...], list[int]]:
    """Sources with `cited` set for those the answer uses, and cited numbers that match none
    (the model invented them)."""
    used = cited_numbers(answer)
    known = {s.n for s in sources}
    marked = tuple(replace(s, cited=s.n in used) for s in sources)
    return marked, [n for n in used if n not in known]


def mark_recalled(
    recalled: Sequence[Recalled], answer: str
) -> tuple[tuple[Recalled, ...], list[int]]:
    """Earlier conversations with `cited` set for those the answer cites as [c<n>], and the
    numbers it cites that match none."""
    used = cited_conversations(answer)
    known = {r.n for r in recalled}
    marked = tuple(replace(r, cited=r.n in used) for r in recalled)
    return marked, [n for n in used if n not in known]


def strip_citations(answer: str) -> str:
    """`answer` without its [n] and [c<n>] markers (code spans untouched). Earlier answers in
    the prompt's history are shown this way: their numbers referred to that turn's material,
    and the model would otherwise reuse them for this turn's different [n]."""
    spans = [(m.start(), m.end()) for m in _FENCED.finditer(answer)]
    spans += [(m.start(), m.end()) for m in _INLINE.finditer(answer)]

    def keep(match: re.Match[str]) -> str:
        inside = any(a <= match.start() < b for a, b in spans)
        return match.group(0) if inside else ""

    return re.sub(rf" ?(?:{_CITATION.pattern}|{_CONVERSATION.pattern})", keep, answer)
