"""Excerpt text a model copied into its answer: found, so it neither counts as citing nor goes
back to the model as if it were the answer.

A small model given excerpts may recite them — headers, `[1] path:lines —` lines and all — in
place of an answer (issue 21: six excerpts copied out, their headers counted as citations
[1]–[6], the lot re-sent as history next turn). Recital is a long verbatim run shared with an
excerpt (RUN_TOKENS tokens or more: a quoted command or a short phrase is fine, a paragraph is
not), or a line that is an excerpt's header or fence tag.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from assistant.chat.prompt import HistoryTurn
from assistant.sessions.turn import Source, Turn

# Tokens in a row shared with an excerpt that make a run a recital (~two lines of prose).
RUN_TOKENS = 16
_SHINGLE = 6  # runs are found from shared 6-token shingles
# A word, a number, or one CJK character (Chinese has no spaces: each character counts).
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W_]+", re.UNICODE)
_TAG_LINE = re.compile(r"^[ \t>*`-]*</?excerpt\b[^\n]*$", re.IGNORECASE | re.MULTILINE)
_TRAILING = re.compile(r"[^\w\s]")
RECITED = "[…]"  # what a recited run is replaced with in the prompt's history


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _header_lines(answer: str, sources: Sequence[Source]) -> list[tuple[int, int]]:
    """Lines that repeat an excerpt's header: its fence tag, or `[n] location`."""
    spans = [(m.start(), m.end()) for m in _TAG_LINE.finditer(answer)]
    for source in sources:
        location = source.item.location
        if not location:
            continue
        pattern = re.compile(rf"^[^\n]*\[{source.n}\][ \t]*{re.escape(location)}[^\n]*$",
                             re.MULTILINE)
        spans += [(m.start(), m.end()) for m in pattern.finditer(answer)]
    return spans


def _copied_runs(answer: str, texts: Sequence[str]) -> list[tuple[int, int]]:
    """Character spans of the answer made of RUN_TOKENS or more tokens in a row that also
    appear, in that order, in one of `texts` (case-insensitive)."""
    tokens = _tokens(answer)
    words = [m.group(0).lower() for m in tokens]
    shingles: set[tuple[str, ...]] = set()
    for text in texts:
        theirs = [m.group(0).lower() for m in _tokens(text)]
        shingles.update(tuple(theirs[i:i + _SHINGLE])
                        for i in range(len(theirs) - _SHINGLE + 1))
    covered = [False] * len(words)
    for i in range(len(words) - _SHINGLE + 1):
        if tuple(words[i:i + _SHINGLE]) in shingles:
            for j in range(i, i + _SHINGLE):
                covered[j] = True
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(words):
        if not covered[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(words) and covered[j + 1]:
            j += 1
        if j - i + 1 >= RUN_TOKENS:
            end = tokens[j].end()
            while end < len(answer) and _TRAILING.match(answer[end]):
                end += 1  # the run's closing punctuation goes with it
            spans.append((tokens[i].start(), end))
        i = j + 1
    return spans


def recited_spans(answer: str, sources: Sequence[Source]) -> list[tuple[int, int]]:
    """Where `answer` recites its excerpts, as merged (start, end) character spans."""
    if not sources or not answer:
        return []
    spans = sorted(_header_lines(answer, sources)
                   + _copied_runs(answer, [s.item.text for s in sources]))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and not answer[merged[-1][1]:start].strip():  # apart by whitespace only
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def without_recital(answer: str, sources: Sequence[Source], mark: str = "") -> str:
    """`answer` with its recited runs replaced by `mark` (nothing by default): what counts as
    the model's own words — for its citations, and as the answer in the next prompt."""
    spans = recited_spans(answer, sources)
    if not spans:
        return answer
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(answer[last:start])
        if mark:
            out.append(mark)
        last = end
    out.append(answer[last:])
    text = "".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def history_turn(turn: Turn) -> HistoryTurn:
    """A stored turn as the next prompts show it: the answer without what it recited (the
    excerpts are not in the history, so recited text would read as the model's own claim)."""
    return HistoryTurn(turn.question, _history_answer(turn.answer, tuple(turn.sources)),
                       interrupted=turn.status == "interrupted", truncated=turn.truncated)


@lru_cache(maxsize=64)
def _history_answer(answer: str, sources: tuple[Source, ...]) -> str:
    """Every turn re-reads the history: each answer is checked once (~1-7 ms apiece)."""
    return without_recital(answer, sources, RECITED)
