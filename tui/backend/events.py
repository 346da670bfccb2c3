"""The agent event log for the events screen (blocking)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from assistant.services import Services
from tui.backend.convert import event_view
from tui.views import EventView

if TYPE_CHECKING:
    from assistant.events.service import EventService

LIST_LIMIT = 500
SEARCH_TOP_K = 50


class EventsAdapter:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.ctx = services.ctx

    def _service(self) -> EventService:
        return self.services.events()

    def list(self) -> list[EventView]:
        return [event_view(e) for e in self._service().store.list(limit=LIST_LIMIT)]

    def search(self, text: str) -> builtins.list[EventView]:
        # Events a server has not embedded yet are still found by their words.
        hits = self._service().search(text, top_k=SEARCH_TOP_K)
        return [event_view(h.event) for h in hits]

    def remove(self, event_id: str) -> int:
        from assistant.erasure.actions import remove_events

        return len(remove_events(self.services, [event_id]))

    def version(self) -> int:
        return self._service().store.change_count()

    def summarize_due(self) -> int:
        from assistant.events.summaries import summarize_due
        from assistant.memory.service import configured_chat_fn

        config = self.ctx.config.events
        return len(summarize_due(
            self._service().store, configured_chat_fn(self.ctx.config),
            every=config.summarize_every, idle_seconds=config.summarize_idle_seconds))
