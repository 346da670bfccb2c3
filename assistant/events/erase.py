"""Removing events without a trace: rows, keywords (the trigger removes them in the same
transaction), vectors (stored in the rows) and the free pages of the file (scrub).

The user-facing removals (`brain events rm/forget-all`, the TUI) go through
assistant/erasure/actions.py `remove_events`/`forget_all_events`: the intent (the exact ids,
with the summaries covering them) is on disk first, so a kill between the delete and the scrub
is finished by the next command.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.events.store import EventStore
from indexing.scrub import scrub_connection


def remove_events(store: EventStore, ids: Sequence[str]) -> list[str]:
    """Erase the events (and summaries written from them); returns the ids removed. Callers
    go through assistant/erasure/actions.py, which records the removal as an intent first."""
    removed = store.delete(ids) if ids else []
    _scrub(store)
    return removed


def forget_all_events(store: EventStore) -> int:
    count = store.forget_all()
    _scrub(store)
    return count


def _scrub(store: EventStore) -> None:
    with store.lock:
        # Deleted tokens linger in old FTS segments until a merge.
        store.keywords.optimize()
        scrub_connection(store.conn, label="event log")
