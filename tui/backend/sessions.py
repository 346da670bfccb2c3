"""Saved sessions for the sessions screen and for resuming (blocking)."""

from __future__ import annotations

import builtins
import logging
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.errors import UserError
from assistant.services import Services
from indexing.errors import log_failure
from tui.backend.convert import hit_view, iso, turn_view
from tui.views import ConversationSearch, SessionView, TurnView

if TYPE_CHECKING:
    from assistant.sessions.store import SessionStore
    from assistant.sessions.turn import HitScores, Turn

log = logging.getLogger(__name__)


class SessionsAdapter:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.ctx = services.ctx
        self._caught_up = False
        self._others_seen: int | None = None  # the sessions database's data_version

    def store(self) -> SessionStore:
        return self.services.sessions()

    def list(self) -> list[SessionView]:
        return [SessionView(s.id, s.title, iso(s.updated_at), s.turn_count)
                for s in self.store().list()]

    def create(self) -> SessionView:
        s = self.store().create(model=self.ctx.config.chat_model)
        return SessionView(s.id, s.title, iso(s.updated_at), 0)

    def turns(self, session_id: str) -> builtins.list[TurnView]:
        store = self.store()
        session = store.resolve(session_id)
        turns = store.turns(session.id)
        logged = _logged_scores(self.services, [t.log_id for t in turns if t.log_id is not None])
        return [turn_view(with_scores(t, logged.get(t.log_id or -1, {})), self.ctx)
                for t in turns]

    def rename(self, session_id: str, title: str) -> None:
        if not title.strip():
            raise UserError("a session title cannot be empty")
        self.store().rename(session_id, title.strip())

    def delete(self, session_id: str) -> None:
        from assistant.erasure.actions import delete_session

        delete_session(self.services, session_id)

    def export_markdown(self, session_id: str, path: Path) -> Path:
        from assistant.chat.export import session_markdown

        store = self.store()
        session = store.resolve(session_id)
        text = session_markdown(session, store.turns(session.id))
        if path.is_dir():
            raise UserError(f"{path} is a folder: give a file name")
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return path

    def search(self, text: str) -> ConversationSearch:
        """Every conversation by meaning, words and date: `text` may name dates in words
        ("kayak last week", "上周") or as `since:7d` / `until:2026-03-01`."""
        from assistant.conversations.finding import find_conversations
        from assistant.timeflags import range_from_filters
        from assistant.timerange import local_now

        now = local_now()
        query, time_range = range_from_filters(text, now)
        index = self.services.conversations()
        self._follow_other_processes()
        if not self._caught_up:  # once: later turns are indexed by the chat as it stores them
            self._caught_up = index.sync().complete
        # The CLI's search with its default count: F2 lists what `brain sessions search` lists.
        found = find_conversations(index, query, time_range=time_range, now=now)
        return ConversationSearch(text, tuple(hit_view(h) for h in found.shown), found.dates,
                                  found.caption)

    def _follow_other_processes(self) -> None:
        """Another process (`brain sessions import`, `forget-all`) committed to the sessions
        database since the last search: its vectors went to the shared collection, which this
        process's client holds in memory as it first read it; read it afresh (and index what
        that process left unindexed, if it was interrupted)."""
        from indexing.chroma_clients import refresh_location

        now = self.store().others_version()
        if self._others_seen is not None and now != self._others_seen:
            refresh_location(self.ctx.config.store.vector_store or str(self.ctx.paths.vectors_dir))
            self._caught_up = False
        self._others_seen = now


def _logged_scores(services: Services, log_ids: builtins.list[int]
                   ) -> dict[int, dict[str, HitScores]]:
    """The scores each turn's sources had when it was answered, from the retrieval log (the
    sessions database keeps the text the model saw, not why it was retrieved); {} when the
    log is gone or unreadable: the sources then show "—", as before."""
    from assistant.sessions.turn import HitScores

    # A log that is not there is not created by reading it.
    if not log_ids or not services.ctx.paths.retrieval_log_db.is_file():
        return {}
    out: dict[int, dict[str, HitScores]] = {}
    try:
        retrieval_log = services.retrieval_log()
        for log_id in log_ids:
            entry = retrieval_log.get(log_id)
            if entry is not None:
                out[log_id] = {
                    h.chunk_id: HitScores(rank=h.rank, vector=h.cosine, keyword=h.keyword,
                                          fused=h.fused)
                    for h in entry.hits
                }
    # Not a worker's failure (this runs inside the resume's `attempt`): scores are a nicety, a
    # damaged log must not stop a resume.
    except Exception as exc:
        log_failure(log, "the resumed turns' scores could not be read", exc,
                    foreseen=(sqlite3.Error, OSError))
        return out
    return out


def with_scores(turn: Turn, scores: dict[str, HitScores]) -> Turn:
    """`turn` with each source's logged scores attached (by chunk id)."""
    from dataclasses import replace

    if not scores:
        return turn
    sources = tuple(
        replace(s, item=replace(s.item, scores=scores[s.item.chunk_id]))
        if s.item.chunk_id in scores and s.item.scores is None else s
        for s in turn.sources
    )
    return replace(turn, sources=sources)
