"""Earlier conversations for the chat: what a question recalls, and the `search_conversations`
tool.

The chat shows the model a few earlier turns next to the question ("Earlier conversations",
cited [c1]), never from the session being had (its turns are in the prompt already). Each one
costs prompt tokens on every turn — reading them takes seconds on a laptop CPU — so only hits
that clearly match are shown: those `finding.find_conversations` shows for the question in
`brain sessions search` and F2 (its relevance floor, near-equal matches newest first, the
closest match at other dates when the period named held none). A time phrase in the question
("what did we decide last week?", "上周") narrows the dates, as in `brain sessions search`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from assistant.conversations.finding import FLOOR, RelevanceFloor, find_conversations
from assistant.conversations.search import ConversationHit, ConversationResult, search_conversations
from assistant.sessions.turn import ConversationItem, Recollection
from assistant.timeflags import range_from_flags
from assistant.timerange import local_now

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex


def item_from_hit(hit: ConversationHit) -> ConversationItem:
    return ConversationItem(
        unit_id=hit.unit_id, session_id=hit.session_id, title=hit.title, seq=hit.seq,
        created_at=hit.created_at, question=hit.question, answer=hit.answer,
        score=hit.score if hit.score is not None else 0.0,
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
    floor: RelevanceFloor = FLOOR,
) -> Recollection:
    """The earlier turns worth showing next to `message`, in reading order (at most `top_k`)."""
    if top_k < 1 or not message.strip():
        return Recollection(message, ())
    found = find_conversations(index, message, top_k=top_k, now=now,
                               exclude_session=exclude_session, floor=floor)
    return _recollection(found.result, [item_from_hit(h) for h in found.shown])


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
