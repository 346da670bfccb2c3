"""What a removal took away, as every trace holder needs to know it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Removal:
    # Folders (or files) removed from the index: absolute paths; a source equal to one or
    # below it is gone.
    folders: tuple[str, ...] = ()
    # Texts whose embeddings must leave the cache (their `text_key`s are derived when erasing):
    # removed chunks no remaining chunk shares are given as keys directly.
    cache_keys: frozenset[str] = frozenset()
    cache_texts: frozenset[str] = frozenset()
    # Memories erased: their ids and texts (tool calls in sessions carry text, not ids).
    memory_ids: frozenset[str] = frozenset()
    memory_texts: frozenset[str] = frozenset()
    all_memories: bool = False  # forget-all: every memory, whatever its id
    # Sessions deleted: their retrieval-log entries and indexes of their turns go too.
    sessions: tuple[str, ...] = ()
    session_log_ids: frozenset[int] = field(default_factory=frozenset)

    @property
    def memories(self) -> bool:
        return self.all_memories or bool(self.memory_ids)
