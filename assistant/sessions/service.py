"""Wiring: the session store of an `AppContext`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.sessions.store import SessionStore

if TYPE_CHECKING:
    from assistant.context import AppContext


def open_sessions(ctx: AppContext) -> SessionStore:
    ctx.paths.ensure()
    return SessionStore.open(ctx.paths.sessions_db)
