"""The memory pane's operations over the memory store (blocking)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from assistant.errors import UserError
from assistant.memory.clock import iso_of
from assistant.services import Services
from tui.backend.convert import iso, memory_view
from tui.views import MemoryChanges, MemoryEvent, MemoryView

if TYPE_CHECKING:
    from assistant.memory.store import MemoryStore


class MemoryAdapter:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.ctx = services.ctx

    def store(self) -> MemoryStore:
        return self.services.memory()

    def list(self, *, all_active: bool, type_: str | None, query: str) -> list[MemoryView]:
        from assistant.memory.model import MemoryType

        try:
            kind = MemoryType(type_) if type_ else None
        except ValueError:
            raise UserError(f"unknown memory type {type_!r}") from None
        memories = self.store().list(type=kind)
        if query:
            needle = query.casefold()
            memories = [m for m in memories if needle in m.text.casefold()
                        or needle in (m.key or "").casefold()]
        return [memory_view(m) for m in memories]

    def count(self) -> int:
        return self.store().count()

    def add(self, text: str, type_: str) -> MemoryView:
        from assistant.memory.model import MemoryType, NewMemory

        return memory_view(self.store().add(NewMemory(text=text, type=MemoryType(type_),
                                                      source="tui")))

    def edit(self, memory_id: str, text: str) -> MemoryView:
        return memory_view(self.store().edit(memory_id, text))

    def delete(self, memory_id: str) -> MemoryView:
        return memory_view(self.store().delete(memory_id))

    def pin(self, memory_id: str, pinned: bool) -> MemoryView:
        return memory_view(self.store().pin(memory_id, pinned))

    def undo(self, memory_id: str, *, expected_version: int) -> MemoryView:
        return memory_view(self.store().undo(memory_id, expected_version=expected_version))

    def current(self, ids: Sequence[str]) -> builtins.list[MemoryView]:
        found = self.store().get_many(ids)
        return [memory_view(found[i]) for i in ids if i in found]

    def history(self, memory_id: str) -> builtins.list[MemoryEvent]:
        return [
            MemoryEvent(str(e.event), e.old_text, e.new_text,
                        f"{e.actor} ({e.via})" if e.via else str(e.actor),
                        iso(iso_of(e.at)))  # UTC, as the TUI has always shown memory times
            for e in self.store().history(memory_id)
        ]

    def forget_all(self) -> int:
        from assistant.erasure.actions import forget_all_memories

        return forget_all_memories(self.services)

    def changes(self, version: int, stamp: float | None) -> MemoryChanges | None:
        from assistant.memory.model import Actor, MemoryStatus

        store = self.store()
        # PRAGMA data_version (plus this connection's own writes): one cheap statement that
        # moves whenever any process commits to memory.sqlite3.
        now = store.change_count()
        if now == version:
            return None
        memories = store.list(statuses=None)
        newest = max((m.updated_at for m in memories), default=0.0)
        learned: builtins.list[MemoryView] = []
        if stamp is not None:  # None: the first look only learns where things stand
            for m in memories:
                if m.updated_at > stamp:
                    events = store.history(m.id)
                    if events and events[-1].actor in (Actor.ASSISTANT, Actor.AGENT):
                        learned.append(memory_view(m))
        count = sum(m.status is MemoryStatus.ACTIVE for m in memories)
        return MemoryChanges(now, count, max(newest, stamp or 0.0), tuple(learned))
