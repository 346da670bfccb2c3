"""Time ranges for searches: `--since` / `--until` values and the range shown to the user.

A range is half-open, `[since, until)`, in absolute time (aware datetimes). Calendar words
("yesterday", "in March") are resolved in the time zone of `now`, which callers take from the
local clock (`local_now()`), so "yesterday" is the user's yesterday.

Flag values: an ISO date or date-time (`2024-03-05`, `2024-03-05T14:00`, `2024-03`, `2024`), a
span back from now (`12h`, `7d`, `2w`, `3m`, `1y`), or any phrase `timephrases` understands
("yesterday", "last week", "上周"). A calendar value names a period: `--since` takes its start and
`--until` its end, so `--until 2024-03-05` includes the 5th.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

from assistant.errors import UserError

Origin = Literal["flag", "query"]

_SPAN = re.compile(r"(\d{1,4})\s*(h|d|w|m|y)", re.IGNORECASE)
_YEAR = re.compile(r"(\d{4})")
_MONTH = re.compile(r"(\d{4})-(\d{1,2})")


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


def _calendar_value(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    """An ISO date/date-time, year-month or year → the period it names."""
    if _YEAR.fullmatch(text):
        return year_range(int(text), now)
    month = _MONTH.fullmatch(text)
    if month:
        if not 1 <= int(month.group(2)) <= 12:
            return None
        return month_range(int(month.group(1)), int(month.group(2)), now)
    try:
        if len(text) == 10:
            return day_range(date.fromisoformat(text), now)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=now.tzinfo)
    return moment, moment


def parse_bound(text: str, now: datetime, *, end: bool, flag: str = "--since") -> datetime:
    """One `--since`/`--until` value → the instant it stands for (`end`: the period's end)."""
    value = text.strip()
    if not value:
        raise UserError(f"{flag} needs a value", hint=_HINT)
    span = _SPAN.fullmatch(value)
    if span:
        return span_back(int(span.group(1)), span.group(2), now)
    period = _calendar_value(value, now)
    if period is None:
        from assistant.timephrases import find_time_phrase

        found = find_time_phrase(value, now)
        if found is not None and not found.rest.strip(" ,.?!"):
            period = (found.range.since or now, found.range.until or now)
    if period is None:
        raise UserError(f"{flag} {value!r}: not a date or a span", hint=_HINT)
    return period[1] if end else period[0]


_HINT = "use an ISO date (2024-03-05), a span back from now (12h, 7d, 2w, 3m, 1y) or a phrase " \
    "such as yesterday or 'last week'"


def range_from_flags(
    since: str | None, until: str | None, now: datetime | None = None
) -> TimeRange | None:
    """The range of `--since`/`--until` values (None when neither is given)."""
    if not since and not until:
        return None
    now = now or local_now()
    start = parse_bound(since, now, end=False, flag="--since") if since else None
    stop = parse_bound(until, now, end=True, flag="--until") if until else None
    if start is not None and stop is not None and stop <= start:
        raise UserError(f"--until {until} is not after --since {since}")
    words = " ".join(p for p in (f"since {since}" if since else "",
                                 f"until {until}" if until else "") if p)
    return TimeRange(start, stop, words, "flag")


# `since:2w`, `until:2026-03-01` typed in a search box: the values `--since/--until` take.
_DATE_FILTER = re.compile(r"(?:^|\s)(since|until):(\S+)", re.IGNORECASE)


def range_from_filters(text: str, now: datetime | None = None) -> tuple[str, TimeRange | None]:
    """(`text` without its `since:`/`until:` filters, their range or None)."""
    flags = {name.lower(): value for name, value in _DATE_FILTER.findall(text)}
    return _DATE_FILTER.sub(" ", text).strip(), range_from_flags(
        flags.get("since"), flags.get("until"), now)
