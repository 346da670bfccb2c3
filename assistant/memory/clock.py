"""Time for the memory layer: injectable, so tests control it.

Stored and passed around as Unix seconds (REAL), the form of every other store (schema step 8);
ISO-8601 UTC text only where a person or a file reads it (`to_iso`, `iso_of`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from indexing.clock import wall_clock

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Now, read from the stores' one wall clock (indexing/clock.py)."""
    return datetime.fromtimestamp(wall_clock(), UTC)


def seconds_of(moment: datetime) -> float:
    """Unix seconds of a clock reading; a naive one is taken as UTC (the memory clock's rule)."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def typed_seconds(moment: datetime, what: str = '"created_at"') -> float:
    """A time a person typed or an import line gave, as stored: plausible (`check_plausible`)
    and cut to whole seconds, as the ISO text stored before schema step 8 was — so lines that
    differ only below a second still count as one moment (one conversation, one import)."""
    return float(math.floor(check_plausible(seconds_of(moment), what)))


def to_iso(moment: datetime) -> str:
    """`2024-05-01T12:00:00Z`: one fixed format, so stored timestamps sort as text."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """Parse an ISO-8601 date or date-time; a time without zone is taken as UTC.

    Raises ValueError with a readable message for anything else.
    """
    value = text.strip()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"not an ISO-8601 date or time: {text!r} (e.g. 2024-05-01 or 2024-05-01T09:30:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def iso_of(seconds: float) -> str:
    """The stored time as shown and exported: `2024-05-01T12:00:00Z` (whole seconds, UTC)."""
    return to_iso(datetime.fromtimestamp(seconds, UTC))


def days_between(earlier: float, now: float) -> float:
    return max(0.0, (now - earlier) / 86400.0)


# Imported or typed times outside this span are typos or broken exports (a `created_at` in year
# -1199, Unix milliseconds read as seconds): refused with their own message, never stored, since
# a wrong date silently misplaces the memory or chat in every time filter.
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)
FUTURE_SLACK = timedelta(days=1)  # clocks and time zones disagree by hours, not days


def check_plausible(seconds: float, what: str = '"created_at"') -> float:
    """`seconds` (Unix time) if it is from 1990 to one day from now, else a ValueError."""
    latest = datetime.now(UTC) + FUTURE_SLACK
    if not EARLIEST.timestamp() <= seconds <= latest.timestamp():
        raise ValueError(f"{what} is not a plausible time ({_describe(seconds)}): expected "
                         f"{EARLIEST.year} to {latest.date().isoformat()}")
    return seconds


def _describe(seconds: float) -> str:
    try:
        return to_iso(datetime.fromtimestamp(seconds, UTC))
    except (OverflowError, OSError, ValueError):  # beyond what datetime can hold
        return f"{seconds:g} Unix seconds"
