"""The adapter from the UI to the core (`assistant/`, `indexing/`): one small class per domain.

Core types are turned into the view types of `tui/views.py` here (convert.py) and nowhere else,
so a change in the core touches this package only. The knowledge, memory, sessions and Ollama
adapters block and are called from worker threads (tui/workers.py); the chat adapter is async
and runs on the UI's own loop. Heavy modules (torch, Chroma, LlamaIndex) are imported inside
methods: importing this package is cheap.
"""

from __future__ import annotations

from assistant.context import AppContext
from assistant.services import Services
from tui.backend.chat import ChatAdapter
from tui.backend.events import EventsAdapter
from tui.backend.knowledge import KnowledgeAdapter
from tui.backend.memory import MemoryAdapter
from tui.backend.ollama import OllamaAdapter
from tui.backend.sessions import SessionsAdapter

__all__ = ["CoreBackend"]


class CoreBackend:
    """The real backend: what `brain` runs. Its adapters share one `Services`, which opens each
    store once; none opens one of its own."""

    def __init__(self, ctx: AppContext, services: Services | None = None) -> None:
        self.ctx = ctx
        self.services = services or Services(ctx, origin="tui")
        self.ollama = OllamaAdapter(self.services)
        self.knowledge = KnowledgeAdapter(self.services)
        self.memory = MemoryAdapter(self.services)
        self.sessions = SessionsAdapter(self.services)
        self.chat = ChatAdapter(self.services)
        self.events = EventsAdapter(self.services)

    def close(self) -> None:
        """Close the stores (the chat is closed by the app before it exits: it is async)."""
        self.services.close()
