"""Removing events without a trace: rows, keywords (the trigger removes them in the same
transaction), vectors (stored in the rows) and the free pages of the file (scrub).

Kept in its own module so it can move onto the shared removal intents (assistant/erasure/):
the delete is one transaction, and a scrub that did not finish is repeated by the next removal
or `brain events forget-all` (scrubbing is idempotent), so a kill between the two leaves the
events removed and at worst their bytes in free pages until then.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.events.store import EventStore
from indexing.scrub import scrub_connection


def remove_events(store: EventStore, ids: Sequence[str]) -> list[str]:
    """Erase the events (and summaries written from them); returns the ids removed."""
    removed = store.delete(ids)
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
