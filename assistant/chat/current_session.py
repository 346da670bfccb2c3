"""Which stored session the engine is talking in. Its reads and writes are blocking (SQLite):
the engine runs them on its sessions thread, the UIs on a worker, never on the event loop."""

from __future__ import annotations

from assistant.llm.errors import ChatError
from assistant.sessions.store import SessionNotFound, SessionStore
from assistant.sessions.turn import CONTINUE_MESSAGE, Session, Turn


class CurrentSession:
    def __init__(self, store: SessionStore, session_id: str | None) -> None:
        self.store = store
        self._session: Session | None = store.get(session_id) if session_id else None

    @property
    def id(self) -> str | None:
        """The current session's id as last read (no database read)."""
        return self._session.id if self._session is not None else None

    @property
    def last(self) -> Session | None:
        """The current session as last read (no database read)."""
        return self._session

    def get(self) -> Session | None:
        """The current session as stored now, or None before the first message of a new one
        (or after it was deleted elsewhere, e.g. from another window)."""
        if self._session is not None:
            try:
                self._session = self.store.get(self._session.id)
            except SessionNotFound:
                self._session = None
        return self._session

    def leave(self) -> None:
        """The next message starts a new session."""
        self._session = None

    def resume(self, ref: str) -> Session:
        self._session = self.store.resolve(ref)
        return self._session

    def ensure(self, model: str) -> Session:
        """The current session, created (with `model`) when there is none."""
        session = self.get()
        if session is None:  # new, or deleted meanwhile: the message starts a new one
            session = self._session = self.store.create(model=model)
        return session

    def turns(self) -> list[Turn]:
        return self.store.turns(self._session.id) if self._session else []

    def history(self, session: Session | None) -> list[Turn]:
        """The turns a prompt shows: those after the rolling summary, failed ones left out."""
        if session is None:
            return []
        return [
            t for t in self.store.turns(session.id, after_seq=session.summary_through)
            if t.status != "failed"
        ]

    def take_retry(self) -> str:
        """The message a retry sends: the last one again if its turn failed or was interrupted
        (that turn is deleted: the new one replaces it), or a request to go on when the last
        answer was cut off at the cap (`truncated`: the cut answer stays). ChatError when
        there is neither."""
        turns = self.turns()
        if turns and turns[-1].status == "complete" and turns[-1].truncated:
            return CONTINUE_MESSAGE
        if not turns or turns[-1].status == "complete":
            raise ChatError("protocol", "there is no failed, interrupted or cut-off turn to "
                            "retry", retryable=False)
        last = turns[-1]
        self.store.delete_turn(last.id)
        return last.question
