"""Stored text as a Rich `Text`: never read as markup, its control characters made visible.

DataTable cells and OptionList prompts given a `str` parse it as markup (an imported title
`[@click=app.quit]` became a live action, a stray `[/]` crashed the screen), and Rich/Textual
keep ESC in their text objects. Every piece of user, document, model or imported text goes
through `plain` (assistant/plain_text.py) and, where a widget would parse a `str`, this `Text`.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from assistant.plain_text import plain


def plain_text(text: str, **style: Any) -> Text:
    """`Text(plain(text), **style)`: a cell, option or label showing stored text literally."""
    return Text(plain(text), **style)
