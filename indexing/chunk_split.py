"""The size cap: split one structural section into spans of at most `size` characters.

A section is cut into atoms at boundaries of decreasing strength (paragraph, line, sentence —
including CJK 。！？； —, clause, whitespace, and a hard cut as the last resort); atoms are packed
greedily into chunks, a chunk that is full backs off to the strongest boundary in its second
half, and the next chunk re-starts inside the last `overlap` characters of the previous one, on
an atom boundary. Everything here works on (start, end) offsets into the one source text, so a
chunk is always an exact slice of the file.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

# Boundary patterns; a cut goes at each match's end, so a delimiter stays with the text before.
PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
LINE = re.compile(r"\n\s*")
SENTENCE = re.compile(
    r"[.!?…]+[\"'”’)\]]*\s+"  # Latin: terminator, optional closing quote, then whitespace
    r"|[。！？；!?]+[」』”’）》〉]*\s*"  # CJK: no space follows a full stop
)
CLAUSE = re.compile(r"[,;:]\s+|[，、：]\s*")
WHITESPACE = re.compile(r"\s+")

PROSE_LEVELS: tuple[re.Pattern[str], ...] = (PARAGRAPH, LINE, SENTENCE, CLAUSE, WHITESPACE)
CODE_LEVELS: tuple[re.Pattern[str], ...] = (PARAGRAPH, LINE, WHITESPACE)
# Atoms are always split down to this many levels (sentences for prose, lines for code) so
# overlap and back-off have fine boundaries to choose from; deeper levels only when too long.
PROSE_MIN_DEPTH = 3
CODE_MIN_DEPTH = 2
HARD = len(PROSE_LEVELS)  # strength of a hard cut: the weakest
_INTRODUCES = frozenset(":：")


@dataclass(frozen=True, slots=True)
class Atom:
    start: int
    end: int
    strength: int  # of the boundary at `end`: 0 = paragraph … HARD = mid-word cut


def split_span(
    text: str,
    start: int,
    end: int,
    *,
    size: int,
    overlap: int,
    code: bool = False,
) -> list[tuple[int, int]]:
    """Spans covering text[start:end], each at most `size` characters (untrimmed)."""
    if end - start <= size:
        return [(start, end)]
    levels = CODE_LEVELS if code else PROSE_LEVELS
    min_depth = CODE_MIN_DEPTH if code else PROSE_MIN_DEPTH
    atoms: list[Atom] = []
    _atomise(text, start, end, levels, 0, min_depth, size, atoms, HARD)
    return _pack(atoms, size, overlap)


def _atomise(
    text: str,
    start: int,
    end: int,
    levels: tuple[re.Pattern[str], ...],
    depth: int,
    min_depth: int,
    size: int,
    out: list[Atom],
    end_strength: int,
) -> None:
    # Pieces under size/8 need no finer cuts: overlap and back-off never work in smaller steps.
    if end - start <= size and (depth >= min_depth or end - start <= size // 8):
        out.append(Atom(start, end, end_strength))
        return
    if depth >= len(levels):
        # Hard cut: the only way to bound one enormous "word" (minified code, a base64 blob).
        for pos in range(start, end, size):
            stop = min(pos + size, end)
            out.append(Atom(pos, stop, end_strength if stop == end else HARD))
        return
    pattern = levels[depth]
    # CODE_LEVELS skips sentence and clause; strengths stay comparable across both ladders.
    strength = PROSE_LEVELS.index(pattern)
    bounds = [start]
    strengths: list[int] = []  # of the cut at bounds[i + 1]
    if pattern is CLAUSE or pattern is WHITESPACE:
        # Weak cuts at least size/8 apart: a 5 MB wall of words would otherwise become a
        # million one-word atoms, and overlap needs no finer steps than that.
        step = max(1, size // 8)
        pos = start + step
        while pos < end:
            match = pattern.search(text, pos, end)
            if match is None or match.end() >= end:
                break
            bounds.append(match.end())
            strengths.append(strength)
            pos = match.end() + step
    else:
        for match in pattern.finditer(text, start, end):
            cut = match.end()
            if start < cut < end and cut > bounds[-1]:
                bounds.append(cut)
                # A paragraph ending in a colon introduces the next one (tldr's "- Do X:" and
                # its command, "Example:" and its code): cutting there is only as good as a
                # line break, so a full chunk prefers to end before the introduction.
                weak = pattern is PARAGRAPH and text[match.start() - 1] in _INTRODUCES
                strengths.append(strength + 1 if weak else strength)
    bounds.append(end)
    strengths.append(end_strength)
    if pattern is LINE or pattern is SENTENCE:
        bounds, strengths = _coalesce(bounds, strengths, size // 8)
    for (a, b), piece_strength in zip(itertools.pairwise(bounds), strengths, strict=True):
        _atomise(text, a, b, levels, depth + 1, min_depth, size, out, piece_strength)


def _coalesce(
    bounds: list[int], strengths: list[int], granularity: int
) -> tuple[list[int], list[int]]:
    """Join runs of tiny pieces (short lines of a table or a word list) into pieces of about
    `granularity` characters: 3 MB of 20-character lines would otherwise be 150k atoms."""
    kept, kept_strengths = [bounds[0]], []
    for i in range(1, len(bounds)):
        last = i == len(bounds) - 1
        if not last and bounds[i + 1] - kept[-1] <= granularity:
            continue  # the next piece still fits: drop this cut
        kept.append(bounds[i])
        kept_strengths.append(strengths[i - 1])
    return kept, kept_strengths


def _pack(atoms: list[Atom], size: int, overlap: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    n = len(atoms)
    i = 0
    previous_end = -1
    while i < n:
        start = atoms[i].start
        j = i
        while j + 1 < n and atoms[j + 1].end - start <= size:
            j += 1
        if j + 1 < n:
            # Full: end at the strongest boundary in the second half (a paragraph end beats a
            # line end beats a sentence end …), the latest one among equals; never so early
            # that the chunk would sit inside the previous one's overlap.
            best = j
            for k in range(j - 1, i - 1, -1):
                if atoms[k].end - start < size // 2 or atoms[k].end <= previous_end:
                    break
                if atoms[k].strength < atoms[best].strength:
                    best = k
            j = best
        spans.append((start, atoms[j].end))
        previous_end = atoms[j].end
        if j + 1 >= n:
            break
        following = j + 1
        if overlap > 0:
            limit = atoms[j].end - overlap
            for k in range(i + 1, j + 1):
                if atoms[k].start >= limit and atoms[following].end - atoms[k].start <= size:
                    following = k
                    break
        i = following
    return spans
