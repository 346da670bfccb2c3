"""README.md must stay true: the quick-start commands, CI calling them, and every setting."""

from __future__ import annotations

from pathlib import Path

from assistant.config_docs import END, START, render_readme

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_quick_start_is_two_make_commands() -> None:
    assert "make run" in README
    assert "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_settings_table_matches_the_code() -> None:
    assert START in README and END in README
    assert render_readme(README) == README, (
        "README settings table is stale: run `.venv/bin/python -m assistant.config_docs`"
    )
