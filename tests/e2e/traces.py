"""Scan every file under a home, byte for byte, for what a removal must have erased.

Text is searched as written, lower-cased, as the keyword index stores it (tokenised and
stemmed) and in UTF-16; vectors as any 16-byte window of their float32 little-endian bytes
(four consecutive components: a chance match is impossible).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from indexing.tokenize import tokenize


def files_under(home: Path) -> list[Path]:
    return [p for p in home.rglob("*") if p.is_file() and not p.is_symlink()]


def text_needles(marker: str) -> list[bytes]:
    forms = {marker, marker.lower(), *tokenize(marker)}
    needles = [f.encode("utf-8") for f in forms if len(f) >= 6]
    needles += [marker.encode("utf-16-le")]
    return needles


def vector_needles(vectors: Iterable[np.ndarray]) -> list[list[bytes]]:
    """Per vector, its windows of four consecutive non-zero, distinct components (a window of
    zeros or of one repeated value would match unrelated bytes)."""
    out = []
    for vector in vectors:
        values = np.asarray(vector, dtype="<f4")
        windows = [values[i : i + 4].tobytes() for i in range(0, len(values) - 3, 4)
                   if np.all(values[i : i + 4] != 0) and len(set(values[i : i + 4])) == 4]
        assert windows, "a vector too sparse to be recognised"
        out.append(windows)
    return out


def find_traces(
    home: Path, markers: Sequence[str] = (), vectors: Sequence[np.ndarray] = ()
) -> dict[str, list[str]]:
    """{file: [what it still holds]} for every file under `home` holding a marker or vector."""
    text = {m: text_needles(m) for m in markers}
    vecs = vector_needles(vectors)
    found: dict[str, list[str]] = {}
    for path in files_under(home):
        data = path.read_bytes()
        held = [m for m, needles in text.items() if any(n in data for n in needles)]
        count = sum(any(w in data for w in windows) for windows in vecs)
        if count:
            held.append(f"{count} removed vector(s)")
        if held:
            found[str(path.relative_to(home))] = held
    return found
