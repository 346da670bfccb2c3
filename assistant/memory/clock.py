"""Time for the memory layer: injectable, so tests control it, and always ISO-8601 UTC."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


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


def days_between(earlier_iso: str, now: datetime) -> float:
    return max(0.0, (now - parse_iso(earlier_iso)).total_seconds() / 86400.0)
