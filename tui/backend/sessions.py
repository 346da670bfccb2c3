"""Saved sessions for the sessions screen and for resuming (blocking)."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.errors import UserError
from indexing.lazy import Lazy
from tui.backend.convert import iso, turn_view
from tui.views import SessionView, TurnView

if TYPE_CHECKING:
    from assistant.chat.sessions import SessionStore


class SessionsAdapter:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self._store = Lazy(lambda: _open_sessions(ctx), close=lambda store: store.close())

    def store(self) -> SessionStore:
        return self._store.get()

    def list(self) -> list[SessionView]:
        return [SessionView(s.id, s.title, iso(s.updated_at), s.turn_count)
                for s in self.store().list()]

    def create(self) -> SessionView:
        s = self.store().create(model=self.ctx.config.ollama.model)
        return SessionView(s.id, s.title, iso(s.updated_at), 0)

    def turns(self, session_id: str) -> builtins.list[TurnView]:
        store = self.store()
        session = store.resolve(session_id)
        return [turn_view(t, self.ctx) for t in store.turns(session.id)]

    def rename(self, session_id: str, title: str) -> None:
        if not title.strip():
            raise UserError("a session title cannot be empty")
        self.store().rename(session_id, title.strip())

    def delete(self, session_id: str) -> None:
        from assistant.erasure.actions import delete_session

        delete_session(self.ctx, self.store(), session_id)

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

    def close(self) -> None:
        self._store.close()


def _open_sessions(ctx: AppContext) -> SessionStore:
    from assistant.chat.sessions import SessionStore

    return SessionStore.open(ctx.paths.sessions_db)
