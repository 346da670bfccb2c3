"""Counts in words: "1 file", "2 files", "1 memory", "3 memories"."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
