"""Results diverse by file: at most `per_file` chunks of one file in the top-k.

Chunks of one file tend to rank together (a page's three sections all mention `kill`), and a
huge repetitive file can fill a whole result list. The top-k keeps each file's best
`per_file` chunks in rank order; the file's other candidates are folded under its best hit
as a count ("+2 more from this file"), so they stay visible without taking a slot another
file needs. The cap never starves the list: when the candidates hold no other file to fill a
slot (one big PDF, `--in file`), folded chunks fill it in rank order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def cap_per_file(
    ranked: Sequence[T],
    top_k: int,
    per_file: int,
    source: Callable[[T], str],
) -> list[tuple[T, int]]:
    """The first `top_k` items of `ranked` with at most `per_file` from one source (0 = no
    cap) while other sources can fill the slots, each with its `more_from_file` count: on a
    file's best item, how many of the file's other candidates in `ranked` are not shown; 0 on
    every other item.
    """
    if top_k <= 0:
        return []
    if per_file <= 0:
        return [(item, 0) for item in ranked[:top_k]]
    keys = [source(item) for item in ranked]
    chosen: list[int] = []
    shown_per_file: Counter[str] = Counter()
    for position, key in enumerate(keys):
        if len(chosen) == top_k:
            break
        if shown_per_file[key] < per_file:
            shown_per_file[key] += 1
            chosen.append(position)
    if len(chosen) < top_k:  # no other file left: fill up with folded chunks, in rank order
        taken = set(chosen)
        for position, key in enumerate(keys):
            if len(chosen) == top_k:
                break
            if position not in taken:
                shown_per_file[key] += 1
                chosen.append(position)
        chosen.sort()
    shown = [ranked[position] for position in chosen]
    total_per_file = Counter(keys)
    out: list[tuple[T, int]] = []
    counted: set[str] = set()
    for item in shown:
        key = source(item)
        more = 0
        if key not in counted:
            counted.add(key)
            more = total_per_file[key] - shown_per_file[key]
        out.append((item, more))
    return out
