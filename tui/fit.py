"""Text that fits a width without cutting a word: status lines, placeholders, hints."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len

ELLIPSIS = "…"


def fit_words(text: str, width: int) -> str:
    """`text` if it fits in `width` cells, else its longest whole-word prefix plus "…"."""
    if width <= 0 or cell_len(text) <= width:
        return text
    words = text.split(" ")
    out = ""
    for word in words:
        candidate = f"{out} {word}" if out else word
        if cell_len(candidate) + cell_len(ELLIPSIS) > width:
            break
        out = candidate
    return (out.rstrip(" ·,;:│") + ELLIPSIS) if out else ELLIPSIS


def fit_parts(parts: Sequence[tuple[str, int]], width: int, separators: Sequence[str], *,
              keep: int = 2) -> str:
    """Join `parts` (text, priority) in their order with the first of `separators` that makes
    them fit `width` cells, else with the last one after dropping the lowest-priority parts
    until they fit; a last part still too long ends at a word with "…". A width of 0 (not laid
    out yet) keeps everything."""
    texts = [t for t, _ in parts]
    if width <= 0:
        return separators[0].join(texts)
    for separator in separators:
        if cell_len(separator.join(texts)) <= width:
            return separator.join(texts)
    separator = separators[-1]
    kept = list(parts)
    while len(kept) > keep and cell_len(separator.join(t for t, _ in kept)) > width:
        kept.remove(min(kept, key=lambda part: part[1]))
    return fit_words(separator.join(t for t, _ in kept), width)
