"""Time phrases in a question ("last week", "in March", "上周", "两天前") → a `TimeRange`.

`find_time_phrase(text, now)` finds the phrase, resolves it against `now` (calendar words in
`now`'s time zone, weeks start on Monday) and returns the text without it, so the retrievers
search for the topic and the dates only filter.

Why not a library: dateparser 1.5 (the well-kept candidate, offline) costs ~0.6 s to import plus
~0.8 s on its first parse, returns single instants rather than periods ("in March" → 18 March),
misses "in the past week", "最近一周", "这个月" and "两天前", and its `search_dates` reads "we"
in "what did we discuss" as a date. A small table of patterns is faster, predictable and tested
phrase by phrase (tests/unit/test_timephrases.py).

Meanings:
- a calendar word names its whole period: "yesterday"/"昨天" = that day, "last week"/"上周" =
  Monday to Sunday before this week, "this month"/"这个月" = this calendar month, "in March"/
  "三月" = the latest March that has begun (this year's when it is March or later);
- "in the past week"/"最近一周"/"past 3 days"/"过去两个月" = a rolling span ending now;
- "two days ago"/"两天前" = that calendar day ("a month ago" that month); vague counts
  ("a few days ago", "几天前") cover 2-5 units back;
- "since last week"/"自从上周" = from the start of that period until now.
"Recently"/"最近" alone are too vague to filter on and are left in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from assistant.timerange import (
    TimeRange,
    day_range,
    month_range,
    span_back,
    start_of_day,
    year_range,
)

Period = tuple[datetime, datetime]
Resolver = Callable[[re.Match[str], datetime], Period | None]


@dataclass(frozen=True, slots=True)
class PhraseMatch:
    range: TimeRange
    phrase: str  # as written in the text
    rest: str  # the text without the phrase


# --- numbers --------------------------------------------------------------------------------

_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}
# Vague counts: (nearest, farthest) units back.
_EN_VAGUE = {"a couple of": (1, 3), "couple of": (1, 3), "a few": (2, 5), "few": (2, 5),
             "several": (3, 7)}
_CN_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}
_CN_VAGUE = {"几": (2, 5), "好几": (3, 7)}

EN_NUM = r"\d{1,3}|a\s+couple\s+of|couple\s+of|a\s+few|few|several|an?|one|two|three|four|" \
    r"five|six|seven|eight|nine|ten|eleven|twelve"
CN_NUM = r"[0-9]{1,3}|好几|几|[一二两三四五六七八九十]{1,3}"


def cn_number(text: str) -> int | None:
    """'三' → 3, '十二' → 12, '二十五' → 25, '7' → 7; None for anything else."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _CN_DIGITS and ch != "十" for ch in text):
        return None
    if "十" not in text:
        return _CN_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    if len(tens) > 1 or len(ones) > 1:
        return None
    return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)


def _count(text: str) -> tuple[int, int] | None:
    """A count as (nearest, farthest): exact counts have both equal."""
    key = " ".join(text.lower().split())
    if key in _EN_VAGUE:
        return _EN_VAGUE[key]
    if key in _CN_VAGUE:
        return _CN_VAGUE[key]
    value = _EN_NUMBERS.get(key)
    if value is None:
        value = cn_number(key)
    if value is None or value <= 0 or value > 999:
        return None
    return value, value


# --- calendar units -------------------------------------------------------------------------

_UNIT = {"hour": "h", "day": "d", "week": "w", "month": "m", "year": "y", "小时": "h",
         "钟头": "h", "天": "d", "日": "d", "周": "w", "星期": "w", "礼拜": "w", "月": "m",
         "年": "y"}


def _unit(text: str) -> str:
    return _UNIT[text.lower().rstrip("s") if text.isascii() else text]


def week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def period_containing(moment: datetime, unit: str) -> Period:
    """The calendar day/week/month/year containing `moment` (hours: that hour)."""
    if unit == "h":
        start = moment.replace(minute=0, second=0, microsecond=0)
        return start, start + timedelta(hours=1)
    if unit == "d":
        return day_range(moment.date(), moment)
    if unit == "w":
        start = start_of_day(week_start(moment.date()), moment)
        return start, start + timedelta(days=7)
    if unit == "m":
        return month_range(moment.year, moment.month, moment)
    return year_range(moment.year, moment)


def periods_back(now: datetime, unit: str, nearest: int, farthest: int) -> Period:
    """From the start of the period `farthest` units back to the end of the one `nearest` back."""
    return (period_containing(span_back(farthest, unit, now), unit)[0],
            period_containing(span_back(nearest, unit, now), unit)[1])


def _shift_period(now: datetime, unit: str, back: int) -> Period:
    return periods_back(now, unit, back, back)


# --- English --------------------------------------------------------------------------------

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
_MONTH_RE = r"january|february|march|april|may|june|july|august|september|october|" \
    r"november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
             "saturday": 5, "sunday": 6}
_WEEKDAY_RE = "|".join(_WEEKDAYS)
# Month names that are also common words: only a date when capitalised or given a year/day.
_AMBIGUOUS_MONTHS = {"may", "march", "mar", "jan", "sep", "dec"}


def latest_month(month: int, now: datetime) -> Period:
    """The latest `month` that has begun: this year's, or last year's if it is still ahead."""
    year = now.year if month <= now.month else now.year - 1
    return month_range(year, month, now)


def _day_of(month: int, day: int, year: int | None, now: datetime) -> Period | None:
    try:
        when = date(year or now.year, month, day)
        if year is None and when > now.date():
            when = date(now.year - 1, month, day)
    except ValueError:
        return None
    return day_range(when, now)


def _days_back(days: int) -> Resolver:
    return lambda m, now: day_range(now.date() - timedelta(days=days), now)


def _en_rolling(m: re.Match[str], now: datetime) -> Period | None:
    count = _count(m["n"]) if m["n"] else (1, 1)
    if count is None:
        return None
    return span_back(count[1], _unit(m["unit"]), now), now


def _en_ago(m: re.Match[str], now: datetime) -> Period | None:
    count = _count(m["n"])
    return None if count is None else periods_back(now, _unit(m["unit"]), *count)


def _en_relative(m: re.Match[str], now: datetime) -> Period | None:
    which, unit = m["which"].lower(), m["unit"].lower()
    back = {"this": 0, "earlier this": 0, "last": 1, "previous": 1, "past": 1}[
        " ".join(which.split())]
    if unit == "weekend":
        monday = week_start(now.date()) - timedelta(days=7 * back)
        if back == 0 and now.date().weekday() < 5:
            monday -= timedelta(days=7)  # "this weekend" on a weekday: the one just past
        saturday = start_of_day(monday + timedelta(days=5), now)
        return saturday, saturday + timedelta(days=2)
    return _shift_period(now, _unit(unit), back)


def _en_before_last(m: re.Match[str], now: datetime) -> Period | None:
    return _shift_period(now, _unit(m["unit"]), 2)


def _en_weekday(m: re.Match[str], now: datetime) -> Period | None:
    wanted = _WEEKDAYS[m["day"].lower()]
    back = (now.date().weekday() - wanted) % 7
    if back == 0 and (m["which"] or "").lower().strip() in ("last", "this past"):
        back = 7
    return day_range(now.date() - timedelta(days=back), now)


def _en_day_month(m: re.Match[str], now: datetime) -> Period | None:
    return _day_of(_MONTHS[m["month"].lower()], int(m["day"]),
                   int(m["year"]) if m["year"] else None, now)


def _en_month(m: re.Match[str], now: datetime) -> Period | None:
    name = m["month"]
    month = _MONTHS[name.lower()]
    if m["year"]:
        return month_range(int(m["year"]), month, now)
    which = (m["which"] or "").lower()
    if name.lower() in _AMBIGUOUS_MONTHS and not name[0].isupper() and not which:
        return None  # "you may", "march on": not dates
    if not which:
        return None  # a bare month name needs "in"/"during"/… or a year to be a date
    if which == "last":
        year = now.year if month < now.month else now.year - 1
        return month_range(year, month, now)
    return latest_month(month, now)


def _en_year(m: re.Match[str], now: datetime) -> Period | None:
    year = int(m["year"])
    return year_range(year, now) if 1970 <= year <= 2100 else None


def _iso_day(m: re.Match[str], now: datetime) -> Period | None:
    try:
        return day_range(date(int(m["y"]), int(m["m"]), int(m["d"])), now)
    except ValueError:
        return None


def _iso_month(m: re.Match[str], now: datetime) -> Period | None:
    month = int(m["m"])
    return month_range(int(m["y"]), month, now) if 1 <= month <= 12 else None


_PREP = r"(?:(?:in|over|during|within|for|from|of|on|at)\s+)?"
_EN_RULES: list[tuple[str, Resolver]] = [
    (r"(?:the\s+)?day\s+before\s+yesterday", _days_back(2)),
    (r"yesterday|last\s+night", _days_back(1)),
    (r"(?:earlier\s+)?today|this\s+(?:morning|afternoon|evening)|tonight", _days_back(0)),
    (_PREP + rf"(?:the\s+)?(?:past|last|previous)\s+(?P<n>{EN_NUM})\s+"
             r"(?P<unit>hour|day|week|month|year)s?", _en_rolling),
    (r"(?:(?:in|over|during|within|for)\s+the\s+(?:past|last)|(?:in|over|during|within)?\s*"
     r"the\s+past)\s+(?P<n>)(?P<unit>hour|day|week|month|year)", _en_rolling),
    (r"(?:the\s+)?(?P<unit>week|month|year)\s+before\s+last", _en_before_last),
    (_PREP + r"(?P<which>last|previous|earlier\s+this|this|past)\s+"
             r"(?P<unit>week|month|year|weekend)", _en_relative),
    (rf"(?P<n>{EN_NUM})\s+(?P<unit>hour|day|week|month|year)s?\s+ago", _en_ago),
    (rf"(?:(?P<which>last|this\s+past|on)\s+)(?P<day>{_WEEKDAY_RE})", _en_weekday),
    (rf"(?:on\s+)?(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?"
     rf"(?P<month>{_MONTH_RE})\.?(?:,?\s+(?P<year>\d{{4}}))?", _en_day_month),
    (rf"(?:on\s+)?(?P<month>{_MONTH_RE})\.?\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
     rf"(?!\d)(?:,?\s+(?P<year>\d{{4}}))?", _en_day_month),
    (rf"(?:(?P<which>in|during|from|of|last|this|back\s+in|since)\s+)?"
     rf"(?P<month>{_MONTH_RE})(?:,?\s+(?P<year>\d{{4}}))?", _en_month),
    (r"(?:on\s+)?(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})", _iso_day),
    (r"(?:in\s+)?(?P<y>\d{4})-(?P<m>\d{1,2})(?!-?\d)", _iso_month),
    (r"(?:in|during|from|of|since)\s+(?P<year>\d{4})", _en_year),
]


# --- Chinese --------------------------------------------------------------------------------

_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_CN_WEEK = r"(?:周|星期|礼拜)"


def _cn_back(prefix: str | None) -> int | None:
    """上上 → 2, 上 → 1, 这/本/这个 → 0, none → None."""
    if not prefix:
        return None
    prefix = prefix.rstrip("个")
    return {"上上": 2, "上": 1, "这": 0, "本": 0}.get(prefix)


def _cn_weekday(m: re.Match[str], now: datetime) -> Period | None:
    back = _cn_back(m["which"])
    if m["day"] == "末":
        monday = week_start(now.date()) - timedelta(days=7 * (back or 0))
        if back is None and now.date().weekday() < 5:
            monday -= timedelta(days=7)  # "周末" on a weekday: the one just past
        saturday = start_of_day(monday + timedelta(days=5), now)
        return saturday, saturday + timedelta(days=2)
    wanted = _CN_WEEKDAYS[m["day"]]
    if back is None:
        return day_range(now.date() - timedelta(days=(now.date().weekday() - wanted) % 7), now)
    monday = week_start(now.date()) - timedelta(days=7 * back)
    return day_range(monday + timedelta(days=wanted), now)


def _cn_relative(unit: str) -> Resolver:
    def resolve(m: re.Match[str], now: datetime) -> Period | None:
        back = _cn_back(m["which"])
        return None if back is None else _shift_period(now, unit, back)

    return resolve


def _cn_year(m: re.Match[str], now: datetime) -> Period | None:
    return _shift_period(now, "y", {"今": 0, "去": 1, "前": 2}[m["which"]])


def _cn_rolling(m: re.Match[str], now: datetime) -> Period | None:
    count = _count(m["n"])
    if count is None:
        return None
    return span_back(count[1], _unit(m["unit"]), now), now


def _cn_ago(m: re.Match[str], now: datetime) -> Period | None:
    count = _count(m["n"])
    return None if count is None else periods_back(now, _unit(m["unit"]), *count)


def _cn_month(m: re.Match[str], now: datetime) -> Period | None:
    month = cn_number(m["month"])
    if month is None or not 1 <= month <= 12:
        return None
    year = int(m["year"]) if m["year"] else None
    if m["day"]:
        day = cn_number(m["day"])
        return None if day is None else _day_of(month, day, year, now)
    return month_range(year, month, now) if year else latest_month(month, now)


def _cn_year_number(m: re.Match[str], now: datetime) -> Period | None:
    year = int(m["year"])
    return year_range(year, now) if 1970 <= year <= 2100 else None


_CN_UNIT = r"(?P<unit>小时|钟头|天|日|周|星期|礼拜|月|年)"
_CN_RULES: list[tuple[str, Resolver]] = [
    (r"大前天", _days_back(3)),
    (r"前天", _days_back(2)),
    (r"昨天晚上|昨天|昨日|昨晚|昨夜|昨儿", _days_back(1)),
    (r"今天早上|今天晚上|今天|今日|今早|今晚|今儿", _days_back(0)),
    (rf"(?P<which>上上个?|上个?|这个?|本)?{_CN_WEEK}(?P<day>[一二三四五六日天末])",
     _cn_weekday),
    (rf"(?P<which>上上个?|上个?|这个?|本){_CN_WEEK}", _cn_relative("w")),
    (r"(?P<which>上上个|上上|上个|上|这个|这|本)月", _cn_relative("m")),
    (r"(?P<which>今|去|前)年", _cn_year),
    (rf"(?:最近|过去|近|这)(?:的)?(?P<n>{CN_NUM})个?{_CN_UNIT}(?:里|内|中|以来)?", _cn_rolling),
    (rf"(?P<n>{CN_NUM})个?{_CN_UNIT}(?:以内|之内|内)", _cn_rolling),
    (rf"(?P<n>{CN_NUM})个?{_CN_UNIT}(?:以前|之前|前)", _cn_ago),
    (r"(?:(?P<year>\d{4})年)?(?P<month>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])月份?"
     r"(?:(?P<day>[0-9]{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])[日号])?",
     _cn_month),
    (r"(?P<year>\d{4})年", _cn_year_number),
]


# --- matching -------------------------------------------------------------------------------

_COMPILED: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE), resolver)
    for pattern, resolver in _EN_RULES
] + [(re.compile(pattern), resolver) for pattern, resolver in _CN_RULES]

_SINCE_BEFORE = re.compile(r"(?:\bsince\s+|自从|自|从)$", re.IGNORECASE)
_SINCE_AFTER = re.compile(r"^(?:以来|开始|起)")
_CN_BEFORE = re.compile(r"在$")
_CN_AFTER = re.compile(r"^(?:的|里|内|中)")


def find_time_phrase(text: str, now: datetime) -> PhraseMatch | None:
    """The first time phrase in `text` (the longest one starting there) resolved against `now`,
    or None. `now` must be time-zone aware."""
    best: tuple[int, int, Period] | None = None
    for pattern, resolver in _COMPILED:
        for m in pattern.finditer(text):
            if best is not None and (m.start() > best[0] or (
                    m.start() == best[0] and m.end() - m.start() <= best[1] - best[0])):
                continue
            period = resolver(m, now)
            if period is not None:
                best = (m.start(), m.end(), period)
                break
    if best is None:
        return None
    start, end, (since, until) = best
    phrase = text[start:end]
    before, after = text[:start], text[end:]
    since_mode = (_SINCE_BEFORE.search(before) or _SINCE_AFTER.match(after)
                  or phrase.lower().startswith("since"))
    if since_mode:
        until = max(until, now)
        before = _cut_end(_SINCE_BEFORE, before)
        after = _cut_start(_SINCE_AFTER, after)
        if not phrase.lower().startswith("since"):
            phrase = "since " + phrase if phrase.isascii() else phrase + "以来"
    if not phrase.isascii():
        before = _cut_end(_CN_BEFORE, before)
        after = _cut_start(_CN_AFTER, after)
    return PhraseMatch(TimeRange(since, until, phrase.strip(), "query"), phrase.strip(),
                       _tidy(before, after))


def _cut_end(pattern: re.Pattern[str], text: str) -> str:
    found = pattern.search(text)
    return text if found is None else text[: found.start()]


def _cut_start(pattern: re.Pattern[str], text: str) -> str:
    found = pattern.match(text)
    return text if found is None else text[found.end():]


def _tidy(before: str, after: str) -> str:
    """Join the text around a removed phrase: one space, no space before punctuation."""
    joined = before.rstrip() + (" " if before.strip() and after.strip() and
                                before.rstrip()[-1:].isascii() and
                                after.lstrip()[:1].isascii() else "") + after.lstrip()
    joined = re.sub(r"\s+([?!.,;:？！。，])", r"\1", joined)
    joined = re.sub(r"^[\s,，:：]+", "", joined)
    return re.sub(r"\s{2,}", " ", joined).strip()


def split_query(
    text: str, now: datetime, *, explicit: TimeRange | None = None
) -> tuple[str, TimeRange | None]:
    """(text for the retrievers, range to filter by). Explicit flags win and leave the text as
    it is; else a phrase found in the text becomes the range and leaves the text. The text may
    come back empty ("yesterday?"): the caller lists what the range holds."""
    if explicit is not None:
        return text, explicit
    found = find_time_phrase(text, now)
    if found is None:
        return text, None
    return found.rest, found.range
