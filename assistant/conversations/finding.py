"""What a conversation search shows: the hits above the relevance floor, in the order people
should read them, and one caption saying what was searched. `brain sessions search`, the TUI's
F2 and Ctrl+F and the chat's recall of earlier conversations all call `find_conversations`, so
they list the same hits with the same words.

The floor is the chat recall's gate (chosen on LoCoMo, bench/conversations.py `gate`): a hit is
shown when its cosine to the question is at least `min_cosine`, or its words match the question
about as strongly as the best keyword hit while its meaning is not far off. When the dense list
is not trusted for the question (Chinese on an English-only model) the keyword evidence decides
alone. A hit under the floor is never an answer: a 4% cosine with no word in common is noise,
whatever rank the fusion gave it.

Two hits that match almost equally (fused within `near` of each other) are both shown, the newer
first: a plan decided last week and an older chat on the same topic both reach the prompt, and
the decision is read first.

Dates: when the period named holds nothing above the floor, the caption says so and the closest
match at other dates is shown instead (marked `outside`), so "kyoto last week" answers "nothing
about kyoto then; the closest is from March" rather than last week's unrelated chat.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assistant.conversations.search import ConversationHit, ConversationResult, search_conversations
from assistant.timerange import TimeRange

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex


@dataclass(frozen=True, slots=True)
class RelevanceFloor:
    """Chosen on LoCoMo (bench/conversations.py `gate`): each question against its own
    conversation (hits holding its evidence must pass) and against the other nine (unrelated
    people: their best hits must not)."""

    min_cosine: float = 0.45
    keyword_cosine: float = 0.3  # a hit with the best keyword score passes from this cosine
    keyword: float = 1.0  # BM25 relative to the best keyword hit's
    keyword_alone: float = 0.5  # the keyword bar when the dense list is not trusted
    near: float = 0.9  # fused at least this share of a shown hit's: an equal match, also shown

    def admits(self, hit: ConversationHit, *, dense_trusted: bool = True) -> bool:
        keyword = hit.keyword or 0.0
        if hit.vector is None and hit.keyword is None:
            return True  # a period listed without a topic ("yesterday?"): all of it was asked
        if not dense_trusted or hit.vector is None:  # (no vectors: a read-only home)
            return keyword >= self.keyword_alone
        cosine = hit.vector
        if cosine >= self.min_cosine:
            return True
        return keyword >= self.keyword and cosine >= self.keyword_cosine


FLOOR = RelevanceFloor()


@dataclass(frozen=True, slots=True)
class Finding:
    """The hits to show (above the floor; `outside` is the closest match at other dates when
    the period named held none), the caption, and the search as it ran."""

    result: ConversationResult
    hits: tuple[ConversationHit, ...] = ()
    outside: ConversationHit | None = None
    below_floor: int = 0  # hits the search ranked but the floor left out
    caption: str = ""
    dates: str = ""  # the period searched, "" for all dates

    @property
    def shown(self) -> tuple[ConversationHit, ...]:
        return self.hits + ((self.outside,) if self.outside is not None else ())

    def to_json(self) -> dict[str, Any]:
        """The `brain sessions search --json` object: the search's, with the floor's hits."""
        return self.result.to_json() | {
            "hits": [h.to_json() for h in self.hits],
            "closest_outside": None if self.outside is None else self.outside.to_json(),
            "below_floor": self.below_floor,
            "caption": self.caption,
        }


def find_conversations(
    index: ConversationIndex,
    query: str,
    *,
    time_range: TimeRange | None = None,
    top_k: int | None = None,
    now: datetime | None = None,
    exclude_session: str | None = None,
    floor: RelevanceFloor = FLOOR,
) -> Finding:
    """Search `query` (dates from `time_range` or a phrase in it) and keep what the floor
    admits, near-equal matches newest first; when a period was applied and held nothing above
    the floor, the closest admitted match at any date."""
    result = search_conversations(index, query, time_range=time_range, top_k=top_k, now=now,
                                  exclude_session=exclude_session)
    hits = admitted(result, floor)
    outside = None
    if not hits and result.applied and result.time_range is not None and result.search_text:
        anywhere = search_conversations(index, result.search_text, top_k=top_k, now=now,
                                        exclude_session=exclude_session)
        inside = {h.unit_id for h in result.hits}
        outside = next((h for h in admitted(anywhere, floor) if h.unit_id not in inside), None)
    found = Finding(result, hits, outside, len(result.hits) - len(hits),
                    dates=result.time_range.describe() if result.time_range else "")
    return replace(found, caption=caption(found))


def admitted(result: ConversationResult, floor: RelevanceFloor) -> tuple[ConversationHit, ...]:
    """The hits the floor admits, the near-equal ones to the best newest first, ranked anew."""
    kept = [h for h in result.hits if floor.admits(h, dense_trusted=result.dense_trusted)]
    if not kept:
        return ()
    # Another conversation as good as the best kept hit (within `near`) though under the floor
    # by itself: the same topic found with the same strength, in a chat not shown yet.
    best = kept[0].fused
    sessions = {h.session_id for h in kept}
    near = [h for h in result.hits if h not in kept and h.session_id not in sessions
            and h.fused >= floor.near * best and (h.vector or 0.0) >= floor.keyword_cosine]
    kept = sorted(kept + near, key=lambda h: h.rank)
    equal = [h for h in kept if h.fused >= floor.near * best]
    rest = [h for h in kept if h.fused < floor.near * best]
    ordered = sorted(equal, key=lambda h: -h.created_at) + rest
    return tuple(replace(h, rank=n) for n, h in enumerate(ordered, start=1))


def caption(found: Finding) -> str:
    """One line for every UI: what was found for what, at which dates."""
    result = found.result
    topic = result.search_text.strip() or result.query.strip()
    dates = found.dates
    if result.time_range is not None and not result.applied:
        dates += " — no conversation then, all dates searched"
    where = f" · dates: {dates}" if dates else ""
    if found.hits:
        count = len(found.hits)
        return f"{count} conversation{'' if count == 1 else 's'} about {topic!r}{where}"
    period = " in that period" if result.applied and result.time_range is not None else ""
    text = f"nothing about {topic!r}{period}{where}"
    if found.outside is not None:
        text += f"; the closest match is from {_day(found.outside.created_at)}, outside it"
    return text


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d")

