"""Which words of a question to highlight in a retrieved chunk."""

from __future__ import annotations

import re

from rich.text import Text

from assistant.plain_text import plain

_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_]|[A-Za-z0-9]")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_STOP_WORDS = (
    "a an and are as at be by can do does for from how i in is it me my of on or that the "
    "this to what when where which who why with you your"
)
_STOP = frozenset(_STOP_WORDS.split())


def query_terms(query: str) -> list[str]:
    """Content words of `query` (and CJK bigrams), longest first so overlaps favour them."""
    terms = {w.lower() for w in _WORD.findall(query) if w.lower() not in _STOP and len(w) > 1}
    for run in _CJK.findall(query):
        if len(run) == 1:
            terms.add(run)
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return sorted(terms, key=lambda t: (-len(t), t))


def highlight(text: str, query: str, style: str = "bold reverse") -> Text:
    rich_text = Text(plain(text))  # stored text: shown, never obeyed
    terms = query_terms(query)
    if terms:
        pattern = "|".join(re.escape(t) for t in terms)
        rich_text.highlight_regex(re.compile(pattern, re.IGNORECASE), style=style)
    return rich_text
