"""No file of the TUI over 400 lines (issue 14: the 1,000-line App was split into a screen and
controllers) and none of the core (`assistant/`, `indexing/`) over 600 (issue 24 item 5). A file
growing past its limit is a concept asking for its own module."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUI_LIMIT = 400
CORE_LIMIT = 600
# The only files allowed past the core limit: none since issue 24 split its two hubs by concept
# (item 2: ChatEngine apart; item 3: MemoryStore by concept). A file added here must be
# needed (a stale entry fails below).
CORE_EXCEPTIONS: frozenset[str] = frozenset()


def _sizes(*folders: str) -> dict[str, int]:
    return {p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
            for folder in folders for p in sorted((ROOT / folder).rglob("*.py"))}


def test_no_tui_file_over_the_limit() -> None:
    over = {path: n for path, n in _sizes("tui").items() if n > TUI_LIMIT}
    assert not over, f"tui files over {TUI_LIMIT} lines: {over}"


def test_no_core_file_over_the_limit() -> None:
    over = {path: n for path, n in _sizes("assistant", "indexing").items()
            if n > CORE_LIMIT and path not in CORE_EXCEPTIONS}
    assert not over, f"assistant/indexing files over {CORE_LIMIT} lines: {over}"


def test_every_core_exception_is_still_needed() -> None:
    sizes = _sizes("assistant", "indexing")
    stale = sorted(p for p in CORE_EXCEPTIONS if sizes.get(p, 0) <= CORE_LIMIT)
    assert not stale, f"split already: remove from CORE_EXCEPTIONS: {stale}"
