"""The README's settings table, generated from the config dataclasses so it cannot drift.

`python -m assistant.config_docs` rewrites the table between the markers in README.md;
tests/unit/test_readme.py fails when the README no longer matches the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from assistant.config import Config
from assistant.config_render import render_markdown

START = "<!-- settings:start -->"
END = "<!-- settings:end -->"


def settings_markdown() -> str:
    return render_markdown(Config()).rstrip("\n")


def render_readme(text: str) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{settings_markdown()}\n{END}{tail}"


def main() -> int:
    readme = Path(__file__).resolve().parent.parent / "README.md"
    readme.write_text(render_readme(readme.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
