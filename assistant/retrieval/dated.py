"""A file search narrowed by dates: from `--since`/`--until`, else from a time phrase in the
query ("notes on the budget from last week", "上周的笔记").

A phrase names the file modification dates to keep and leaves the text the retrievers see. When
no indexed file was modified in the phrase's range, every date is searched with the query as
typed (the phrase may have been the topic: "find files changed in the past week"), and the
result says so (`applied` False). Flags the user typed are never second-guessed: a flag range
with nothing in it is an error. The same rule as `brain sessions search` (conversations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from assistant.retrieval.filters import NothingInRange
from assistant.timephrases import split_query

if TYPE_CHECKING:
    from assistant.retrieval.hit import RetrievalResult
    from assistant.timerange import TimeRange


_WORD = re.compile(r"\w")


class FileSearcher(Protocol):
    """What a dated search needs of the retriever (HybridRetriever)."""

    def search(self, query: str, *, top_k: int | None = None, in_path: str | None = None,
               modified: TimeRange | None = None, typed: str | None = None
               ) -> RetrievalResult: ...


@dataclass(frozen=True, slots=True)
class DatedResult:
    result: RetrievalResult
    time_range: TimeRange | None  # the range asked for (flags, else the query's phrase)
    applied: bool  # False: nothing was modified then, every date was searched
    within: str | None = None  # the --in filter the range held no file under

    def time_range_json(self) -> dict[str, Any] | None:
        """The `time_range` value of `brain search --json` (the shape `brain sessions search`
        uses)."""
        if self.time_range is None:
            return None
        return self.time_range.to_json() | {"applied": self.applied}

    def describe(self) -> str:
        """'files modified 2026-11-23 → 2026-11-29 (last week)', for a status line."""
        if self.time_range is None:
            return ""
        if not self.applied:
            under = f" under {self.within}" if self.within else ""
            return (f"no files{under} modified {self.time_range.describe()}: "
                    "all dates searched")
        return f"files modified {self.time_range.describe()}"


def search_dated(
    retriever: FileSearcher,
    query: str,
    *,
    now: datetime,
    explicit: TimeRange | None = None,
    phrases: bool = True,
    top_k: int | None = None,
    in_path: str | None = None,
) -> DatedResult:
    """`query` searched within `explicit` (flags), else within a time phrase it contains
    (unless `phrases` is False: the user said its dates are its topic)."""
    if explicit is not None or not phrases:
        result = retriever.search(query, top_k=top_k, in_path=in_path, modified=explicit)
        return DatedResult(result, explicit, explicit is not None)
    query = query.strip()
    text, found = split_query(query, now)
    if found is None:
        return DatedResult(retriever.search(query, top_k=top_k, in_path=in_path), None, False)
    if not _WORD.search(text):
        text = query  # "yesterday?" alone: its words are searched within its dates
    try:
        # The result and the retrieval log keep the query as typed (batch output is matched
        # to its input by it); `search_query` says what was searched.
        result = retriever.search(text, top_k=top_k, in_path=in_path, modified=found,
                                  typed=query)
    except NothingInRange:
        return DatedResult(retriever.search(query, top_k=top_k, in_path=in_path), found, False,
                           within=in_path)
    return DatedResult(result, found, True)
