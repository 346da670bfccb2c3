"""The wall clock every store stamps its rows with: injectable (`clock=`), so a test decides
what time it is instead of sleeping or patching `time.time`.

Every store keeps one storage form per kind of time value. Moments are epoch seconds (REAL)
in sessions.db (sessions, turns, session_imports, session_summaries, conversation_units,
turn_conversations), events.db (events.ts), retrieval_log.db (entries.time, rated_at), the
knowledge manifest (folders.added_at, files.indexed_at; files.mtime and chunks.mtime are the
file system's, also epoch seconds) and memory.db (memories, history, profile since its schema
step 8; imports since step 6: the run is assistant/import_run.py, shared with session_imports),
whose clock (assistant/memory/clock.py) reads this one. ISO-8601 text is only what people and
export files read.
"""

from __future__ import annotations

import time
from collections.abc import Callable

EpochClock = Callable[[], float]


def wall_clock() -> float:
    """Now, in seconds since the epoch (UTC)."""
    return time.time()
