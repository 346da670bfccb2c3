"""Core types → the view types of `tui/views.py`: the one place that knows both.

A source row is built one way whether it comes from a search or from a chat turn: both are a
numbered `Source` over a `KnowledgeItem` with typed scores (`HitScores`); a turn resumed from
the sessions database gets them back from the retrieval log (tui/backend/sessions.py), and has
none only when its log entry is gone.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.memory.clock import iso_of
from assistant.memory.model import Memory
from tui.views import ConversationView, EventView, MemoryView, SourceView, TurnView

if TYPE_CHECKING:
    from assistant.conversations.search import ConversationHit
    from assistant.events.model import Event
    from assistant.sessions.turn import MemoryItem, Recalled, Source, Turn


def iso(value: datetime | float | str | None) -> str:
    """A date for display, in local time: `2026-01-15 09:30`."""
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value[:16].replace("T", " ")
    if isinstance(value, float | int):
        value = datetime.fromtimestamp(value).astimezone()
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def source_view(source: Source, ctx: AppContext) -> SourceView:
    item = source.item
    scores = item.scores
    return SourceView(
        number=source.n, chunk_id=item.chunk_id, source=item.source, relpath=item.relpath,
        heading=item.heading, text=item.text, start_line=item.start_line or 1,
        end_line=item.end_line or item.start_line or 1,
        vector=scores.vector if scores else None, keyword=scores.keyword if scores else None,
        fused_rank=scores.rank if scores else source.n,
        recent=scores.recency_boost > 0 if scores else _is_recent(item.source, ctx),
        cited=source.cited, more_from_file=scores.more_from_file if scores else 0,
        page=_page(item.page, item.end_page),
    )


def _page(page: int | None, end_page: int | None) -> str:
    if page is None:
        return ""
    return f"p. {page}–{end_page}" if end_page is not None and end_page != page else f"p. {page}"


def _is_recent(path: str, ctx: AppContext) -> bool:
    """For a stored source (no scores kept): would the file get a recency boost now?"""
    cfg = ctx.config.retrieval
    if cfg.recency_boost <= 0:
        return False
    try:
        age_days = (time.time() - os.stat(path).st_mtime) / 86400
    except OSError:
        return False
    return age_days < cfg.recency_days


def memory_view(memory: Memory) -> MemoryView:
    return MemoryView(memory.id, memory.type.value, memory.text, memory.key, memory.pinned,
                      # UTC, as the TUI has always shown memory times (sessions': local)
                      memory.status.value, iso(iso_of(memory.updated_at)), memory.version)


def memory_item_view(item: MemoryItem) -> MemoryView:
    if isinstance(item.memory, Memory):  # live: the stored memory, with its current state
        return memory_view(item.memory)
    return MemoryView(item.memory_id, item.kind, item.text)


def conversation_view(recalled: Recalled) -> ConversationView:
    """An earlier conversation as an answer recalled it ([c<n>]); a deleted one keeps only its
    number, date and the "conversation deleted" marker."""
    item = recalled.item
    return ConversationView(
        recalled.n, item.session_id, item.title, iso(item.created_at), item.question,
        item.answer, item.seq, recalled.cited, item.score,
    )


def hit_view(hit: ConversationHit) -> ConversationView:
    """A hit of a search over all conversations."""
    return ConversationView(hit.rank, hit.session_id, hit.title, iso(hit.created_at),
                            hit.question, hit.answer, hit.seq, score=hit.score)


def turn_view(turn: Turn, ctx: AppContext) -> TurnView:
    from assistant.chat.answer_notes import answer_notes
    from assistant.sessions.turn import TRUNCATED_NOTE

    notes = answer_notes(turn)
    status = " · ".join(p for p in (
        turn.model,
        turn.status if turn.status != "complete" else "",
        turn.error,
        f"⚠ {TRUNCATED_NOTE}" if turn.truncated else "",
        *(f"⚠ {note}" for note in notes),
    ) if p)
    return TurnView(
        turn.question, turn.answer,
        tuple(source_view(s, ctx) for s in turn.sources),
        tuple(memory_item_view(m) for m in turn.memories),
        status,
        str(turn.log_id) if turn.log_id is not None else None,  # 👍/👎 on resumed answers
        tuple(conversation_view(c) for c in turn.conversations),
        truncated=turn.truncated, notes=notes,
    )


def event_view(event: Event) -> EventView:
    return EventView(event.id, iso(event.ts), event.type.value, event.importance, event.agent,
                     event.session or "", event.text)
