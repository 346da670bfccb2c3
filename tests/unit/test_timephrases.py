"""Every supported time phrase, English and Chinese, against a fixed "now".

NOW is Wednesday 2026-03-18 15:00 UTC: this week began Monday 16 March, last week is 9-15 March,
the last weekend 14-15 March.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from assistant.errors import UserError
from assistant.timeflags import parse_bound, range_from_flags
from assistant.timephrases import cn_number, find_time_phrase, split_query
from assistant.timerange import TimeRange

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=UTC)


def d(text: str) -> datetime:
    """'2026-03-17' or '2026-03-17 15:00' in NOW's zone."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# (phrase in a question, since, until, text left for the retrievers)
CASES: list[tuple[str, str, str, str]] = [
    # --- English: days
    ("what did we discuss yesterday?", "2026-03-17", "2026-03-18", "what did we discuss?"),
    ("the recipe from last night", "2026-03-17", "2026-03-18", "the recipe from"),
    ("what did I ask today", "2026-03-18", "2026-03-19", "what did I ask"),
    ("notes from this morning", "2026-03-18", "2026-03-19", "notes from"),
    ("the day before yesterday's plan", "2026-03-16", "2026-03-17", "'s plan"),
    ("two days ago", "2026-03-16", "2026-03-17", ""),
    ("what did we say 3 days ago about tea", "2026-03-15", "2026-03-16",
     "what did we say about tea"),
    ("a few days ago", "2026-03-13", "2026-03-17", ""),
    ("a couple of days ago", "2026-03-15", "2026-03-18", ""),
    # --- English: weeks
    ("the rsync command you gave me last week", "2026-03-09", "2026-03-16",
     "the rsync command you gave me"),
    ("in the past week", "2026-03-11 15:00", "2026-03-18 15:00", ""),
    ("what did we cover over the past week?", "2026-03-11 15:00", "2026-03-18 15:00",
     "what did we cover?"),
    ("in the last 2 weeks", "2026-03-04 15:00", "2026-03-18 15:00", ""),
    ("over the last two weeks", "2026-03-04 15:00", "2026-03-18 15:00", ""),
    ("past 3 days", "2026-03-15 15:00", "2026-03-18 15:00", ""),
    ("this week", "2026-03-16", "2026-03-23", ""),
    ("earlier this week", "2026-03-16", "2026-03-23", ""),
    ("the week before last", "2026-03-02", "2026-03-09", ""),
    ("a week ago", "2026-03-09", "2026-03-16", ""),
    ("last weekend", "2026-03-14", "2026-03-16", ""),
    ("this weekend", "2026-03-14", "2026-03-16", ""),
    ("last Monday", "2026-03-16", "2026-03-17", ""),
    ("last Wednesday", "2026-03-11", "2026-03-12", ""),
    ("on Friday", "2026-03-13", "2026-03-14", ""),
    # --- English: months and years
    ("this month", "2026-03-01", "2026-04-01", ""),
    ("last month", "2026-02-01", "2026-03-01", ""),
    ("in the past month", "2026-02-18 15:00", "2026-03-18 15:00", ""),
    ("a month ago", "2026-02-01", "2026-03-01", ""),
    ("in March", "2026-03-01", "2026-04-01", ""),
    ("in April", "2025-04-01", "2025-05-01", ""),
    ("during december", "2025-12-01", "2026-01-01", ""),
    ("last March", "2025-03-01", "2025-04-01", ""),
    ("what did I say in March 2025 about tea", "2025-03-01", "2025-04-01",
     "what did I say about tea"),
    ("Which hobby did Sam take up in May 2023?", "2023-05-01", "2023-06-01",
     "Which hobby did Sam take up?"),
    ("on 4 February, 2023", "2023-02-04", "2023-02-05", ""),
    ("on March 5th", "2026-03-05", "2026-03-06", ""),
    ("on 2024-03-05", "2024-03-05", "2024-03-06", ""),
    ("in 2023", "2023-01-01", "2024-01-01", ""),
    ("this year", "2026-01-01", "2027-01-01", ""),
    ("last year", "2025-01-01", "2026-01-01", ""),
    ("two years ago", "2024-01-01", "2025-01-01", ""),
    ("since last week", "2026-03-09", "2026-03-18 15:00", ""),
    ("everything since March", "2026-03-01", "2026-04-01", "everything"),
    # --- Chinese: days
    ("昨天我们讨论了什么", "2026-03-17", "2026-03-18", "我们讨论了什么"),
    ("昨晚的菜谱", "2026-03-17", "2026-03-18", "菜谱"),
    ("今天问过什么", "2026-03-18", "2026-03-19", "问过什么"),
    ("前天", "2026-03-16", "2026-03-17", ""),
    ("大前天", "2026-03-15", "2026-03-16", ""),
    ("两天前", "2026-03-16", "2026-03-17", ""),
    ("三天前说的命令", "2026-03-15", "2026-03-16", "说的命令"),
    ("几天前", "2026-03-13", "2026-03-17", ""),
    # --- Chinese: weeks
    ("上周你给我的 rsync 命令", "2026-03-09", "2026-03-16", "你给我的 rsync 命令"),
    ("上个星期", "2026-03-09", "2026-03-16", ""),
    ("上礼拜", "2026-03-09", "2026-03-16", ""),
    ("上上周", "2026-03-02", "2026-03-09", ""),
    ("这周", "2026-03-16", "2026-03-23", ""),
    ("本周", "2026-03-16", "2026-03-23", ""),
    ("最近一周", "2026-03-11 15:00", "2026-03-18 15:00", ""),
    ("最近一周的会议", "2026-03-11 15:00", "2026-03-18 15:00", "会议"),
    ("过去一周里聊了什么", "2026-03-11 15:00", "2026-03-18 15:00", "聊了什么"),
    ("最近7天", "2026-03-11 15:00", "2026-03-18 15:00", ""),
    ("近三天", "2026-03-15 15:00", "2026-03-18 15:00", ""),
    ("这两天", "2026-03-16 15:00", "2026-03-18 15:00", ""),
    ("一周内", "2026-03-11 15:00", "2026-03-18 15:00", ""),
    ("一周前", "2026-03-09", "2026-03-16", ""),
    ("上周五的会议", "2026-03-13", "2026-03-14", "会议"),
    ("星期一", "2026-03-16", "2026-03-17", ""),
    ("周末", "2026-03-14", "2026-03-16", ""),
    ("上周末", "2026-03-14", "2026-03-16", ""),  # the weekend of last week (9-15 March)
    # --- Chinese: months and years
    ("这个月", "2026-03-01", "2026-04-01", ""),
    ("本月", "2026-03-01", "2026-04-01", ""),
    ("上个月", "2026-02-01", "2026-03-01", ""),
    ("上月", "2026-02-01", "2026-03-01", ""),
    ("过去两个月", "2026-01-18 15:00", "2026-03-18 15:00", ""),
    ("三个月前", "2025-12-01", "2026-01-01", ""),
    ("三月", "2026-03-01", "2026-04-01", ""),
    ("三月份的计划", "2026-03-01", "2026-04-01", "计划"),
    ("十二月", "2025-12-01", "2026-01-01", ""),
    ("5月", "2025-05-01", "2025-06-01", ""),
    ("2023年5月", "2023-05-01", "2023-06-01", ""),
    ("5月3日", "2025-05-03", "2025-05-04", ""),
    ("三月五号", "2026-03-05", "2026-03-06", ""),
    ("今年", "2026-01-01", "2027-01-01", ""),
    ("去年", "2025-01-01", "2026-01-01", ""),
    ("前年", "2024-01-01", "2025-01-01", ""),
    ("2024年", "2024-01-01", "2025-01-01", ""),
    ("自从上周以来", "2026-03-09", "2026-03-18 15:00", ""),
]


@pytest.mark.parametrize(("text", "since", "until", "rest"), CASES,
                         ids=[c[0] for c in CASES])
def test_phrase(text: str, since: str, until: str, rest: str) -> None:
    found = find_time_phrase(text, NOW)
    assert found is not None, text
    assert (found.range.since, found.range.until) == (d(since), d(until))
    assert found.rest == rest
    assert found.range.origin == "query"
    assert (found.phrase and found.phrase in text) or found.phrase.startswith("since")


@pytest.mark.parametrize("text", [
    "May I ask how rsync works?",
    "we march on",
    "how do I set up a cron job",
    "三个月的计划",  # a duration, not a date
    "what did we discuss recently",
    "最近在看什么书",
    "the 5 steps of the setup",
    "port 2023 is open",
])
def test_no_phrase(text: str) -> None:
    assert find_time_phrase(text, NOW) is None


def test_day_boundaries_follow_the_zone_of_now() -> None:
    tokyo = timezone(timedelta(hours=9))
    found = find_time_phrase("yesterday", NOW.astimezone(tokyo))  # 2026-03-19 00:00 there
    assert found is not None
    assert found.range.since == datetime(2026, 3, 18, tzinfo=tokyo)


def test_split_query_prefers_flags() -> None:
    flags = TimeRange(d("2024-01-01"), None, "since 2024-01-01", "flag")
    assert split_query("what did we say last week", NOW, explicit=flags) == (
        "what did we say last week", flags)
    text, found = split_query("what did we say last week", NOW)
    assert text == "what did we say" and found is not None and found.origin == "query"
    assert split_query("rsync flags", NOW) == ("rsync flags", None)


@pytest.mark.parametrize(("text", "value"), [("三", 3), ("十", 10), ("十二", 12), ("二十五", 25),
                                             ("两", 2), ("7", 7), ("百", None), ("三三三", None)])
def test_chinese_numbers(text: str, value: int | None) -> None:
    assert cn_number(text) == value


# --- flags ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "end", "expected"), [
    ("2024-03-05", False, "2024-03-05"),
    ("2024-03-05", True, "2024-03-06"),
    ("2024-03", False, "2024-03-01"),
    ("2024-03", True, "2024-04-01"),
    ("2024", True, "2025-01-01"),
    ("2024-03-05T14:30", False, "2024-03-05 14:30"),
    ("12h", False, "2026-03-18 03:00"),
    ("7d", False, "2026-03-11 15:00"),
    ("2w", False, "2026-03-04 15:00"),
    ("3m", False, "2025-12-18 15:00"),
    ("1y", False, "2025-03-18 15:00"),
    ("yesterday", False, "2026-03-17"),
    ("yesterday", True, "2026-03-18"),
    ("last week", False, "2026-03-09"),
    ("上周", True, "2026-03-16"),
])
def test_parse_bound(value: str, end: bool, expected: str) -> None:
    assert parse_bound(value, NOW, end=end) == d(expected)


@pytest.mark.parametrize("value", ["", "soon", "7x", "2024-13", "2024-02-30", "last week rsync"])
def test_parse_bound_rejects(value: str) -> None:
    with pytest.raises(UserError):
        parse_bound(value, NOW, end=False)


def test_range_from_flags() -> None:
    assert range_from_flags(None, None, NOW) is None
    rng = range_from_flags("2w", "yesterday", NOW)
    assert rng is not None and rng.origin == "flag"
    assert (rng.since, rng.until) == (d("2026-03-04 15:00"), d("2026-03-18"))
    assert rng.contains(d("2026-03-10").timestamp())
    assert not rng.contains(d("2026-03-18").timestamp())
    assert rng.to_json()["since"] == "2026-03-04T15:00:00+00:00"
    with pytest.raises(UserError, match="not after"):
        range_from_flags("yesterday", "2w", NOW)


def test_describe_shows_last_day_included() -> None:
    found = find_time_phrase("last week", NOW)
    assert found is not None
    assert found.range.describe() == "2026-03-09 → 2026-03-15 (last week)"
