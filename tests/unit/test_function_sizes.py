"""No function of the core (`assistant/`, `indexing/`) over 80 lines (issue 24 item 5): a
function that long holds several steps that want names of their own. Read statically by
`bench/shape.py` (the same count `python -m bench.shape` prints as `functions_over_80`)."""

from __future__ import annotations

from bench.shape import function_sizes

LIMIT = 80
# Functions allowed past the limit, each with its size when excepted: none since the engine's
# split (issue 24 item 2). The list may only shrink: a stale entry fails below, and so does an
# excepted function that grew.
EXCEPTIONS: dict[str, int] = {}


def _core_sizes() -> dict[str, int]:
    """`path name` → lines, for every function of the core (the longest if a name repeats)."""
    sizes: dict[str, int] = {}
    for lines, where in function_sizes():
        path_line, name = where.split(" ", 1)
        path = path_line.rsplit(":", 1)[0]
        if path.startswith(("assistant/", "indexing/")):
            key = f"{path} {name}"
            sizes[key] = max(lines, sizes.get(key, 0))
    return sizes


def test_no_core_function_over_the_limit() -> None:
    over = {where: n for where, n in _core_sizes().items()
            if n > LIMIT and where not in EXCEPTIONS}
    assert not over, f"functions over {LIMIT} lines (split them into named steps): {over}"


def test_every_exception_is_still_needed_and_not_growing() -> None:
    sizes = _core_sizes()
    stale = sorted(w for w in EXCEPTIONS if sizes.get(w, 0) <= LIMIT)
    assert not stale, f"split already: remove from EXCEPTIONS: {stale}"
    grown = {w: sizes[w] for w, n in EXCEPTIONS.items() if sizes.get(w, 0) > n}
    assert not grown, f"an excepted function grew (it may only shrink): {grown}"
