"""`--since` / `--until` values (and `since:`/`until:` typed in a search box) → a `TimeRange`.

A value is an ISO date or date-time (`2024-03-05`, `2024-03-05T14:00`, `2024-03`, `2024`), a
span back from now (`12h`, `7d`, `2w`, `3m`, `1y`), or any phrase `timephrases` understands
("yesterday", "last week", "上周"). A calendar value names a period: `--since` takes its start and
`--until` its end, so `--until 2024-03-05` includes the 5th.

Apart from timerange.py because it reads phrases: timephrases is built on timerange, so the two
would import each other.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from assistant.errors import UserError
from assistant.timephrases import find_time_phrase
from assistant.timerange import (
    TimeRange,
    day_range,
    local_now,
    month_range,
    span_back,
    year_range,
)

_SPAN = re.compile(r"(\d{1,4})\s*(h|d|w|m|y)", re.IGNORECASE)
_YEAR = re.compile(r"(\d{4})")
_MONTH = re.compile(r"(\d{4})-(\d{1,2})")


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
