"""What every stage of a turn reads (`TurnContext`, a snapshot taken when the turn starts, so a
`configure` meanwhile changes the next turn, not this one), the engine's worker threads, and
the model's facts as a turn wants them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from assistant.chat.calibration import TokenCalibration
from assistant.chat.engine_settings import EngineSettings
from assistant.chat.sources import ConversationSource, KnowledgeSource, MemorySource
from assistant.daemon_pool import DaemonThreadPool
from assistant.llm.errors import ChatError
from assistant.llm.models import ModelCatalog, ModelFacts, effective_window
from assistant.llm.provider import ChatTransport
from assistant.sessions.store import SessionStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EnginePools:
    """One daemon thread per store: SQLite connections stay on the thread that opened them,
    and a call stuck in a network request never keeps the process alive after the user quits
    (assistant/daemon_pool.py). `sessions` takes the session store's reads and writes off the
    event loop (one at a time, in the order they were asked): a write waiting on another
    process's lock (`brain sessions import`) must never freeze the UI."""

    knowledge: DaemonThreadPool
    memory: DaemonThreadPool
    conversations: DaemonThreadPool
    sessions: DaemonThreadPool

    @classmethod
    def start(cls) -> EnginePools:
        return cls(
            knowledge=DaemonThreadPool(1, thread_name_prefix="brain-knowledge"),
            memory=DaemonThreadPool(1, thread_name_prefix="brain-memory"),
            conversations=DaemonThreadPool(1, thread_name_prefix="brain-conversations"),
            sessions=DaemonThreadPool(1, thread_name_prefix="brain-sessions"),
        )


@dataclass(frozen=True, slots=True)
class TurnContext:
    settings: EngineSettings
    store: SessionStore
    catalog: ModelCatalog
    calibration: TokenCalibration
    transport: ChatTransport
    knowledge: KnowledgeSource | None
    memory: MemorySource | None
    conversations: ConversationSource | None
    pools: EnginePools

    def counter(self) -> Callable[[str], int]:
        """Token counts for the session's model (our estimate, calibrated by its replies)."""
        return self.calibration.counter(self.settings.model)

    def window(self, facts: ModelFacts | None) -> int:
        return window_of(self.settings, facts)


def window_of(settings: EngineSettings, facts: ModelFacts | None) -> int:
    """The session's one num_ctx (see models.effective_window)."""
    return effective_window(facts, num_ctx=settings.num_ctx, cap=settings.context_cap)


def facts_or_fail(catalog: ModelCatalog, model: str) -> ModelFacts | None:
    """The model's facts (blocking); a missing model or a server down raises at once — the chat
    request would fail the same way —, any other failure leaves them unknown."""
    try:
        return catalog.facts(model)
    except ChatError as exc:
        if exc.kind in ("model_not_found", "unavailable"):
            raise
        log.warning("could not read model facts for %s: %s", model, exc)
        return None


def facts_quiet(catalog: ModelCatalog, model: str) -> ModelFacts | None:
    """The model's facts (blocking), None on any failure (background work)."""
    try:
        return catalog.facts(model)
    except ChatError:
        return None
