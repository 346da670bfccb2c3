"""No file of the TUI over 400 lines (issue 14: the 1,000-line App was split into a screen and
controllers; a file growing past this is a concept asking for its own module)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 400


def test_no_tui_file_over_the_limit() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted((ROOT / "tui").rglob("*.py"))}
    over = {path: n for path, n in sizes.items() if n > LIMIT}
    assert not over, f"tui files over {LIMIT} lines: {over}"
