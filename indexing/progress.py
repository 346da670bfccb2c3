"""Progress events of a sync, for progress bars (CLI) and the TUI's index manager; the one
progress event of every derived index (`derived_index.py`: the conversation index counts its
units as chunks).

The sync only reports counts; rate and ETA are for the display to compute from successive
events, so the engine stays free of clocks and formatting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    scanning = "scanning"  # walking folders, comparing stat with the manifest
    repairing = "repairing"  # reconciling the vector store with the manifest (or re-embedding)
    indexing = "indexing"  # reading and chunking changed files (one event per file)
    embedding = "embedding"  # embedding their chunks (one event per model batch)
    done = "done"


@dataclass(frozen=True, slots=True)
class SyncProgress:
    phase: Phase
    files_done: int = 0
    files_total: int = 0  # files that need reading (new or changed); unchanged ones are free
    # chunks written so far (indexing), embedded so far (embedding) or vectors repaired
    chunks_done: int = 0
    # chunks to repair (repairing) or queued for embedding so far (embedding); 0 = unknown
    chunks_total: int = 0
    path: str = ""  # the file or folder being worked on, for display


ProgressCallback = Callable[[SyncProgress], None]
