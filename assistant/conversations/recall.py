"""Earlier conversations for the chat: what a question recalls, and the `search_conversations`
tool.

The chat shows the model a few earlier turns next to the question ("Earlier conversations",
cited [c1]), never from the session being had (its turns are in the prompt already). Each one
costs prompt tokens on every turn — reading them takes seconds on a laptop CPU — so only hits
that clearly match are shown: the gate keeps a hit whose cosine similarity to the question is
at least `RecallSettings.min_cosine`, or whose words match the question's as strongly as the
best keyword hit while its meaning is not far off (`keyword_cosine`). A time phrase in the
question ("what did we decide last week?", "上周") narrows the dates, as in `brain sessions
search`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from assistant.conversations.search import ConversationHit, ConversationResult, search_conversations
from assistant.sessions.turn import ConversationItem, Recollection
from assistant.timerange import local_now, range_from_flags

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """The gate. Chosen on LoCoMo (bench/conversations.py `gate`): each question against its
    own conversation (hits holding its evidence must pass) and against the other nine
    (unrelated people: their best hits must not)."""

    min_cosine: float = 0.45
    keyword_cosine: float = 0.3  # a hit with the best keyword score passes from this cosine


def passes(hit: ConversationHit, settings: RecallSettings = RecallSettings()) -> bool:
    cosine = hit.vector if hit.vector is not None else 0.0
    if cosine >= settings.min_cosine:
        return True
    return (hit.keyword or 0.0) >= 1.0 and cosine >= settings.keyword_cosine


def item_from_hit(hit: ConversationHit) -> ConversationItem:
    return ConversationItem(
        unit_id=hit.unit_id, session_id=hit.session_id, title=hit.title, seq=hit.seq,
        created_at=hit.created_at, question=hit.question, answer=hit.answer, score=hit.score,
        data=hit.to_json(),
    )


def _recollection(result: ConversationResult, items: list[ConversationItem]) -> Recollection:
    return Recollection(result.search_text, tuple(items), time_range=result.time_range,
                        applied=result.applied)


def recall_for_chat(
    index: ConversationIndex,
    message: str,
    *,
    exclude_session: str | None,
    top_k: int,
    now: datetime | None = None,
    settings: RecallSettings = RecallSettings(),
) -> Recollection:
    """The earlier turns worth showing next to `message`, best first (at most `top_k`)."""
    if top_k < 1 or not message.strip():
        return Recollection(message, ())
    result = search_conversations(index, message, top_k=top_k, now=now,
                                  exclude_session=exclude_session)
    return _recollection(result, [item_from_hit(h) for h in result.hits if passes(h, settings)])


def search_for_tool(
    index: ConversationIndex,
    query: str,
    *,
    since: str | None,
    until: str | None,
    exclude_session: str | None,
    top_k: int,
    now: datetime | None = None,
) -> Recollection:
    """The `search_conversations` tool: the model asked, so no gate (its dates are flags:
    always applied). A date it wrote that cannot be read raises a UserError it is shown."""
    now = now or local_now()
    time_range = range_from_flags(since, until, now)
    result = search_conversations(index, query, time_range=time_range, top_k=top_k, now=now,
                                  exclude_session=exclude_session)
    return _recollection(result, [item_from_hit(h) for h in result.hits])
