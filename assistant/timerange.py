"""Time ranges for searches: `--since` / `--until` values and the range shown to the user.

A range is half-open, `[since, until)`, in absolute time (aware datetimes). Calendar words
("yesterday", "in March") are resolved in the time zone of `now`, which callers take from the
local clock (`local_now()`), so "yesterday" is the user's yesterday.

The `--since`/`--until` values are read by `assistant/timeflags.py`, which may use the phrases
of `timephrases` (built on this module) without an import circle.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

Origin = Literal["flag", "query"]



@dataclass(frozen=True, slots=True)
class TimeRange:
    """`[since, until)`; either end may be open (None)."""

    since: datetime | None = None
    until: datetime | None = None
    phrase: str = ""  # the words it came from ("last week"), or the flag values
    origin: Origin = "flag"

    def contains(self, timestamp: float) -> bool:
        if self.since is not None and timestamp < self.since.timestamp():
            return False
        return self.until is None or timestamp < self.until.timestamp()

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """(since, until) as Unix timestamps, for SQL filters."""
        return (
            self.since.timestamp() if self.since is not None else None,
            self.until.timestamp() if self.until is not None else None,
        )

    @property
    def empty(self) -> bool:
        return self.since is not None and self.until is not None and self.until <= self.since

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(timespec="seconds") if self.since else None,
            "until": self.until.isoformat(timespec="seconds") if self.until else None,
            "phrase": self.phrase,
            "origin": self.origin,
        }

    def describe(self) -> str:
        """'2024-03-11 → 2024-03-18 (last week)', for status lines."""
        def day(value: datetime | None) -> str:
            if value is None:
                return "…"
            if value.time() == time(0):
                return value.strftime("%Y-%m-%d")
            return value.strftime("%Y-%m-%d %H:%M")

        until = self.until
        if until is not None and until.time() == time(0):
            until = until - timedelta(days=1)  # show the last day included, not the boundary
            shown = f"{day(self.since)} → {until.strftime('%Y-%m-%d')}"
        else:
            shown = f"{day(self.since)} → {day(until)}"
        return f"{shown} ({self.phrase})" if self.phrase else shown


def local_now() -> datetime:
    return datetime.now().astimezone()


def start_of_day(day: date, like: datetime) -> datetime:
    return datetime.combine(day, time(0), tzinfo=like.tzinfo)


def day_range(day: date, like: datetime) -> tuple[datetime, datetime]:
    start = start_of_day(day, like)
    return start, start_of_day(day + timedelta(days=1), like)


def add_months(moment: datetime, months: int) -> datetime:
    """Calendar months later (negative: earlier); the day is clamped to the month's length."""
    index = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(index, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def month_range(year: int, month: int, like: datetime) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=like.tzinfo)
    return start, add_months(start, 1)


def year_range(year: int, like: datetime) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=like.tzinfo), datetime(year + 1, 1, 1, tzinfo=like.tzinfo)


def span_back(count: int, unit: str, now: datetime) -> datetime:
    """`now` minus `count` hours/days/weeks/months/years (unit: h d w m y)."""
    unit = unit.lower()
    if unit == "h":
        return now - timedelta(hours=count)
    if unit == "d":
        return now - timedelta(days=count)
    if unit == "w":
        return now - timedelta(weeks=count)
    if unit == "m":
        return add_months(now, -count)
    return add_months(now, -12 * count)
