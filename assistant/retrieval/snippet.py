"""A short excerpt of a chunk around the words of the query, for result lists."""

from __future__ import annotations

import re

_WORD = re.compile(r"[\w-]+|[\u3400-\u9fff]{2,}", re.UNICODE)


def snippet(text: str, query: str, width: int = 200) -> str:
    """About `width` characters of `text` on one line, centred on the first place where a
    query word occurs (the start of the text when none does), with … marking cuts.
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    positions: list[int] = []
    for word in _WORD.findall(query.lower()):
        if len(word) < 2:
            continue
        # CJK runs: try two-character pieces too, queries rarely repeat a whole phrase.
        pieces = [word] + ([word[i : i + 2] for i in range(len(word) - 1)] if not word.isascii()
                           else [])
        for piece in pieces:
            at = lowered.find(piece)
            if at >= 0:
                positions.append(at)
                break
    start = max(0, min(positions) - width // 4) if positions else 0
    if start > 0:
        space = flat.find(" ", start, start + 20)
        start = space + 1 if space >= 0 else start
    end = min(len(flat), start + width)
    if end < len(flat):
        space = flat.rfind(" ", start + width // 2, end)
        end = space if space > 0 else end
    return ("…" if start > 0 else "") + flat[start:end].strip() + ("…" if end < len(flat) else "")
