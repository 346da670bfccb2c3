"""The chat engine: one conversation (a session) with the model, its knowledge and memory.

`ChatEngine` is the facade the UIs use: session and model, `send`, `retry`, the background work
asked for, `aclose`. A turn is a pipeline of stages (turn_pipeline.py), each in its own module,
passing typed values: gather (turn_gather.py: retrieve ∥ recall ∥ recall conversations) →
prompt (turn_prompt.py) → generate with the tool loop (turn_generate.py) → store
(turn_store.py); `TurnStream` (turn_stream.py) carries its events. Background work (extraction,
the rolling summary, session summaries) is scheduled by background_scheduler.py, the server's
prompt cache kept by prompt_cache.py, the engine's threads closed by engine_close.py.

Every turn is stored, whatever happens: complete, interrupted (partial answer), or failed (the
user's message and the error), so a message typed is never lost and `retry()` can send it again.
The model's reasoning is shown apart (`Thinking`) and never stored as the answer.

What a real Ollama on a laptop needs (see README "Ollama on a laptop"):
- one model and one context size per session: every request for the chat model — turns, the
  preload, background jobs — carries the same `options.num_ctx`, since another value makes
  Ollama reload the model;
- a cacheable prompt (prompt.py): Ollama reuses the longest common prefix of the previous
  request, so a turn re-reads only what is new;
- background jobs only while the user is idle, and cancelled the moment a question is sent
  (Ollama serves one request at a time);
- a long, silent first-token wait (`first_token_timeout`, with `Waiting` progress) and a short
  limit between chunks (`timeout`).

Knowledge search, memory recall, the recall of earlier conversations and the session store's
calls are blocking (SQLite, the embedding model): each runs on a worker thread of its own
(turn_context.EnginePools), never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from assistant.chat import model_load
from assistant.chat.background_scheduler import BackgroundScheduler
from assistant.chat.calibration import TokenCalibration
from assistant.chat.conversation_indexer import ConversationIndexer
from assistant.chat.current_session import CurrentSession
from assistant.chat.engine_close import close_threads
from assistant.chat.engine_settings import EngineSettings, checked_changes
from assistant.chat.events import Done, Failed
from assistant.chat.prompt_cache import PromptCache
from assistant.chat.sources import ChatFn, ConversationSource, KnowledgeSource, MemorySource
from assistant.chat.turn_context import EnginePools, TurnContext
from assistant.chat.turn_pipeline import TurnPipeline
from assistant.chat.turn_state import TurnState
from assistant.chat.turn_store import TurnRecorder
from assistant.chat.turn_stream import TurnStream
from assistant.llm.errors import ChatError
from assistant.llm.models import ModelCatalog
from assistant.llm.provider import ChatTransport, Link, make_transport
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import Session, Turn

# The engine's public names, wherever they live now (service.py, the UIs, tests import them).
__all__ = ["ChatEngine", "ChatFn", "ConversationSource", "EngineSettings", "KnowledgeSource",
           "MemorySource", "TurnStream"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChatEngine:
    """One conversation (a session) with the model, its knowledge and memory."""

    def __init__(
        self,
        settings: EngineSettings,
        store: SessionStore,
        *,
        knowledge: KnowledgeSource | None,
        memory: MemorySource | None,
        catalog: ModelCatalog,
        session_id: str | None = None,
        conversations: ConversationSource | None = None,
        calibration: TokenCalibration | None = None,
    ) -> None:
        self.settings = settings
        # Our token estimate scaled to each model's tokenizer, learnt from its replies.
        self.calibration = calibration if calibration is not None else TokenCalibration()
        self.store = store
        self.knowledge = knowledge
        self.memory = memory
        self.conversations = conversations
        self.catalog = catalog
        self.current = CurrentSession(store, session_id)
        if self.current.last is not None and self.current.last.model:
            self.settings = replace(self.settings, model=self.current.last.model)
        self.pools = EnginePools.start()
        self.indexer = ConversationIndexer(conversations, self.pools.conversations)
        self.transport = self._new_transport()
        self._old_transports: list[ChatTransport] = []
        self._active: TurnStream | None = None
        self._retrying = False  # a retry is reading the session (on the sessions thread)
        self.cache = PromptCache(self._context, self._conversation)
        self.background = BackgroundScheduler(
            store, memory, pools=self.pools, indexer=self.indexer, cache=self.cache,
            context=self._context, current=lambda: self.current.id, session=self.current.get,
            answering=lambda: self._active is not None and not self._active.done)
        self.jobs = self.background.jobs
        self.extraction = self.background.extraction
        self.summarizer = self.background.summarizer
        self.recorder = TurnRecorder(store, self.pools.sessions, self.indexer,
                                     lambda: self.current.ensure(self.settings.model))
        self.pipeline = TurnPipeline(self.current, self.cache, self.recorder, self.background)
        self._closed = False

    def _new_transport(self) -> ChatTransport:
        s = self.settings
        return make_transport(Link(s.provider, s.host, s.api_key_env, s.api_key_file),
                              timeout=s.timeout, first_token_timeout=s.first_token_timeout)

    def _context(self) -> TurnContext:
        """What a turn (or a background job) starting now works with."""
        return TurnContext(self.settings, self.store, self.catalog, self.calibration,
                           self.transport, self.knowledge, self.memory, self.conversations,
                           self.pools)

    async def _on_store(self, call: Callable[[], T]) -> T:
        """A session-store call on the sessions thread, never on the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.pools.sessions, call)

    # --- session and model ------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        """The current session, or None before the first message of a new one (or after the
        session was deleted elsewhere, e.g. from another window)."""
        return self.current.get()

    @property
    def model(self) -> str:
        return self.settings.model

    def new_session(self) -> None:
        """Start a new, empty conversation (long-term memory still applies). The one left is
        summarised at the next idle moment."""
        self.current.leave()
        self.background.arm_idle_timer_threadsafe()

    def resume(self, session_id: str) -> Session:
        previous = self.current.id
        session = self.current.resume(session_id)
        if session.model:
            self.settings = replace(self.settings, model=session.model)
        if previous is not None and previous != session.id:
            self.background.arm_idle_timer_threadsafe()
        return session

    def turns(self) -> list[Turn]:
        return self.current.turns()

    def available_models(self) -> list[str]:
        """Installed chat models (/api/tags, embedding models left out by their /api/show
        capabilities). Blocking: call from a worker thread."""
        return self.catalog.list_models()

    def set_model(self, name: str, *, check: bool = True) -> None:
        """Switch model for the following turns, keeping the session. Blocking: with `check`,
        asks Ollama that the model is installed and can chat (ChatError if not, and nothing
        changes — a mistyped name never sticks to the session); without, a missing model fails
        the next turn instead (which stores the message)."""
        name = model_load.chat_model(self.catalog, name, check=check)
        self.settings = replace(self.settings, model=name)
        if self.current.id is not None:
            self.store.set_model(self.current.id, name)

    def set_persona(self, prompt: str) -> None:
        """Use this system prompt from the next turn on (see config [personas])."""
        if not prompt.strip():
            raise ChatError("protocol", "the system prompt is empty", retryable=False)
        self.settings = replace(self.settings, persona=prompt)

    def configure(self, **changes: Any) -> EngineSettings:
        """Change options for the following turns: temperature, num_ctx, keep_alive, tools,
        history_turns… (any EngineSettings field). Unknown names and bad values are errors."""
        changes = checked_changes(self.settings, changes)
        self.settings = replace(self.settings, **changes)
        if {"timeout", "first_token_timeout"} & set(changes):
            self._old_transports.append(self.transport)
            self.transport = self._new_transport()
        return self.settings

    async def warm_up(self) -> None:
        """Do the slow first-turn work ahead of time (the TUI calls this at start): import the
        LLM client, ask Ollama about the model, open knowledge and memory (which loads the
        embedding model). Failures are left for the first turn to report. Loading the chat
        model itself is `preload()`."""
        self.background.loop = asyncio.get_running_loop()
        await model_load.warm_up(self._context())

    async def preload(self, *, warm: bool = True) -> float:
        """Load the session's model in Ollama now — an empty chat request with the same
        num_ctx and keep_alive as the turns — so the first question does not pay the load
        (the TUI calls this at start and after a model change). Returns the seconds the load
        took; raises ChatError (e.g. Ollama down, model not pulled). With `warm`, Ollama then
        reads the session's opening (system message, summary, history) as a background job
        — cancelled by a question — so the first turn reads only what is new."""
        elapsed = await model_load.load_model(self._context())
        if warm and (self._active is None or self._active.done):
            # (A question sent meanwhile already has Ollama read the conversation.)
            self.cache.dirty = True
            self.jobs.start(self.cache.warm, disposable=True)
        return elapsed

    # --- a turn -----------------------------------------------------------------------------

    def send(
        self, message: str, *, use_knowledge: bool = True, use_memory: bool = True
    ) -> TurnStream:
        """Start a turn (must be called from a running event loop). Background work yields at
        once: Ollama serves one request at a time, and the user's comes first."""
        text = message.strip()
        if not text:
            raise ChatError("protocol", "the message is empty", retryable=False)
        self._check_idle()
        self.jobs.yield_now()
        self.background.loop = asyncio.get_running_loop()
        self.background.cancel_idle_timer()
        state = TurnState(text, time.perf_counter(), self.settings.model)
        self._active = TurnStream(
            lambda emit: self.pipeline.run(self._context(), state, emit, use_knowledge,
                                           use_memory),
            lambda emit: self.recorder.interrupted(state, emit),
            saved_in=self.store.path,
        )
        return self._active

    def _check_idle(self) -> None:
        if self._retrying or (self._active is not None and not self._active.done):
            raise ChatError(
                "busy", "the previous answer is still being written",
                "wait for it to finish, or cancel it first", retryable=False,
            )

    async def ask(self, message: str, **kwargs: bool) -> Done | Failed:
        """Run a turn to the end and return its final event."""
        return await self.send(message, **kwargs).result()

    async def retry(self, **kwargs: bool) -> TurnStream:
        """Send the last message again if its turn failed or was interrupted; the new turn
        replaces it. An answer cut off at the cap (`truncated`) is continued instead: a new
        turn asks the model to go on from where it stopped (the cut answer stays). The
        session's turns are read and the old one deleted on the sessions thread; meanwhile
        the engine is busy (a `send` is refused, as during a turn)."""
        self._check_idle()
        self._retrying = True
        try:
            message = await self._on_store(self.current.take_retry)
        finally:
            self._retrying = False
        return self.send(message, **kwargs)

    # --- the session store (blocking: on the sessions thread) --------------------------------

    async def _conversation(self) -> tuple[Session | None, list[Turn]]:
        """The current session and its recent turns (the prompt cache's opening)."""
        def read() -> tuple[Session | None, list[Turn]]:
            session = self.current.get()
            return session, self.current.history(session)

        return await self._on_store(read)

    # --- background work asked for (background_scheduler.py) ---------------------------------

    async def summarize(self, timeout: float | None = None) -> bool:
        """Summarise the current session now, if it needs it (`brain ask`, at its end)."""
        return await self.background.summarize(timeout)

    async def catch_up(self, timeout: float | None = None) -> None:
        """Fold the current session's old turns into its rolling summary now."""
        await self.background.catch_up(timeout)

    async def finish(self, timeout: float | None = None) -> bool:
        """At the end of a one-shot `brain ask`: extract the session's unread turns."""
        return await self.background.finish(timeout)

    async def keep_cached(self, timeout: float | None = None) -> bool:
        """At the end of `brain ask`: have the server read the conversation's opening."""
        return await self.background.keep_cached(timeout)

    def pending_extraction(self) -> int:
        """How many turns `extract_pending` would read. Blocking (SQLite)."""
        return self.background.pending_extraction(self.memory is not None)

    async def extract_pending(self, timeout: float | None = None) -> int:
        """Memory extraction now over the turns not extracted yet (the TUI, when idle)."""
        return await self.background.extract_pending(self.memory is not None, timeout)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for background work (extraction, the rolling summary, session summaries,
        indexing the turns) to finish."""
        await self.background.drain(timeout)

    async def aclose(self, *, patience: float | None = None) -> None:
        """Cancel background work, close the connections to Ollama, then close the sources
        that have a `close` (`Services`' have none: it closes their stores) on the threads
        that use them, after whatever job is running there. `patience`: how long to wait for
        those (None: until done). Quitting waits a moment only: a close left behind runs when
        its thread's job ends, or never if the process ends first — which SQLite survives
        (WAL, transactions), and the conversation index catches up at the next sync."""
        if self._closed:
            return
        self._closed = True
        self.background.cancel_idle_timer()
        await self.jobs.aclose()
        await self.indexer.wait(5 if patience is None else patience)
        for transport in [*self._old_transports, self.transport]:
            await transport.aclose()
        await close_threads(self.pools, {"knowledge": self.knowledge, "memory": self.memory,
                                         "conversations": self.conversations}, patience)
