"""The chat engine: one turn = retrieve ∥ recall ∥ recall conversations → assemble → stream →
store.

`ChatEngine.send(message)` returns a `TurnStream`, an async iterator of typed events
(`Retrieved`, `Waiting`, `Thinking`, `ToolCalled`, `Token`, then `Done` or `Failed`).
`TurnStream.cancel()` stops the generation at once — the HTTP stream is closed, which makes
Ollama stop, even while it is still loading the model or reading the prompt — and the turn ends
with `Done` marked interrupted, the partial answer stored.

Every turn is stored, whatever happens: complete, interrupted (partial answer), or failed (the
user's message and the error), so a message typed is never lost and `retry()` can send it again.
The model's reasoning is shown apart (`Thinking`) and never stored as the answer.

What a real Ollama on a laptop needs (see README "Ollama on a laptop"):
- one model and one context size per session: every request for the chat model — turns, the
  preload, background jobs — carries the same `options.num_ctx`, since another value makes
  Ollama reload the model;
- a cacheable prompt (prompt.py): Ollama reuses the longest common prefix of the previous
  request, so a turn re-reads only what is new;
- background jobs (memory extraction, the rolling summary, session summaries) only while the
  user is idle, and cancelled the moment a question is sent (Ollama serves one request at a
  time);
- a long, silent first-token wait (`first_token_timeout`, with `Waiting` progress) and a short
  limit between chunks (`timeout`).

Knowledge search, memory recall and the recall of earlier conversations are blocking (SQLite,
the embedding model); each runs on its own single worker thread, concurrently, and always on the
same thread (SQLite connections are bound to the thread that opened them).

Session summaries (summarizer.py): written when a session goes idle (`summarize_idle_seconds`
after the last answer without a new question) or is closed (a new session, another session
resumed: summarised at the next idle moment; `brain ask` summarises at its end, bounded;
quitting the app leaves it to the next run, so quitting stays instant), with the session's
model and num_ctx. Each stored turn and summary is indexed for recall off the answer's path
(conversation_indexer.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assistant.chat.background import BackgroundJobs
from assistant.chat.budget import ContextOverflow, answer_cap
from assistant.chat.calibration import TokenCalibration, prompt_split
from assistant.chat.citations import mark_cited, mark_recalled
from assistant.chat.conversation_indexer import ConversationIndexer
from assistant.chat.events import ChatEvent, Done, Failed, Retrieved, Token, ToolCalled
from assistant.chat.extraction import MemoryExtraction
from assistant.chat.prompt import Prompt, PromptInputs, PromptMessage, assemble
from assistant.chat.recital import history_turn, without_recital
from assistant.chat.reply import ReplyReader, WaitInfo
from assistant.chat.retrieval_history import retrieval_history
from assistant.chat.summarizer import SessionSummarizer
from assistant.chat.summary import (
    NUM_PREDICT as SUMMARY_NUM_PREDICT,
)
from assistant.chat.summary import (
    SUMMARY_SCHEMA,
    SUMMARY_SYSTEM,
    bounded,
    clean_summary,
    summary_request,
    turns_to_fold,
)
from assistant.chat.tools import MAX_TOOL_ROUNDS, run_tool, tool_specs
from assistant.daemon_pool import DaemonThreadPool
from assistant.errors import UserError
from assistant.llm import errors
from assistant.llm.errors import ChatError
from assistant.llm.models import ModelCatalog, ModelFacts, effective_window
from assistant.llm.provider import ChatTransport, Link, make_transport
from assistant.llm.thinking import think_value
from assistant.llm.tokens import MESSAGE_OVERHEAD, count_tokens
from assistant.message_kind import classify, material_for
from assistant.sessions.store import SessionNotFound, SessionStore
from assistant.sessions.turn import (
    CONTINUE_MESSAGE,
    MemoryItem,
    Recalled,
    Recollection,
    Retrieval,
    Session,
    Source,
    ToolUse,
    Turn,
)

if TYPE_CHECKING:
    from assistant.config import Config

log = logging.getLogger(__name__)

RETRIEVAL_HISTORY_TURNS = 3  # earlier user messages given to the retriever for follow-ups
PROFILE_MEMORY_ID = "profile"  # assistant.memory.store.PROFILE_ID
REMEMBERED = "Remembered: {text}"
NOT_REMEMBERED = "Not remembered: {reason}"

ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]


class KnowledgeSource(Protocol):
    """What the engine needs from knowledge retrieval (see service.py for the real one)."""

    def search(
        self, message: str, *, history: Sequence[str] = (), top_k: int | None = None
    ) -> Retrieval: ...


class MemorySource(Protocol):
    """What the engine needs from long-term memory (see service.py for the real one)."""

    def recall(self, query: str, k: int) -> list[MemoryItem]:
        """Candidates, most important first (profile, pinned, then the `k` most relevant);
        the prompt's memory budget decides which go in. The user's profile, if any, is the
        item with memory_id PROFILE_MEMORY_ID: it goes into the stable system message, the
        rest after the question."""
        ...

    def used(self, memory_ids: Sequence[str]) -> None:
        """The memories the prompt included (recall counts them as used)."""
        ...

    def note(self, message: str, *, session_id: str | None) -> MemoryItem | None:
        """Store an explicit "remember that …" in the user's message; None if there is none."""
        ...

    def remember(
        self, text: str, kind: str, *, session_id: str | None, said: Sequence[str] = ()
    ) -> str:
        """Store a memory the model proposes (the `remember` tool); returns a one-line
        confirmation. It must be grounded in `said`, the user's messages of this conversation:
        otherwise (or for a secret) a UserError says why it was refused."""
        ...

    def extract(self, exchanges: Sequence[tuple[str, str]], *, session_id: str,
                chat: ChatFn | None = None) -> None:
        """Run long-term memory extraction over (question, answer) pairs, asking the model
        through `chat` (the engine's cancellable background call) when given."""
        ...


class ConversationSource(Protocol):
    """What the engine needs from the user's earlier conversations (service.py: the real one
    over the conversation index)."""

    def recall(self, message: str, *, session_id: str | None, top_k: int) -> Recollection:
        """Earlier turns relevant to `message`, best first, never from `session_id` (the
        conversation being had, whose turns the prompt shows anyway); a time phrase in the
        message ("last week", "上周") narrows the dates."""
        ...

    def search(self, query: str, *, since: str | None, until: str | None,
               session_id: str | None, top_k: int) -> Recollection:
        """The `search_conversations` tool: `since`/`until` as `--since/--until` take them (a
        UserError for one it cannot read)."""
        ...

    def index(self, session_id: str) -> None:
        """Index what changed in this session (its new turn, a new summary) now."""
        ...


@dataclass(frozen=True, slots=True)
class EngineSettings:
    host: str  # the Ollama host, or the OpenAI-compatible base URL
    model: str
    provider: str = "ollama"  # [llm] provider (assistant/llm/provider.py)
    api_key_env: str = ""  # where an OpenAI-compatible server's key is read, never the key
    api_key_file: str = ""
    timeout: float = 60.0  # silence allowed between two chunks of an answer
    first_token_timeout: float = 900.0  # the silent load + prompt reading before them
    think: str = "auto"  # auto | on | off (thinking.py)
    temperature: float = 0.3
    num_ctx: int = 0
    context_cap: int = 8192
    keep_alive: str = "10m"
    persona: str = "You are second-brain, a private assistant. Answer clearly and concisely."
    tools: bool = False
    history_turns: int = 8
    fold_batch: int = 4  # fold old turns into the summary this many at a time (summary.py)
    answer_reserve: int = 1024
    max_answer_tokens: int = 0  # num_predict of every answer; 0 = the answer reserve
    memory_share: float = 0.25
    knowledge_share: float = 0.45
    memory_top_k: int = 5
    extract_every_turns: int = 6
    top_k: int | None = None
    recall_top_k: int = 3  # earlier turns recalled per question (0 = off)
    conversation_share: float = 0.15
    summaries: bool = True  # write session summaries in idle time
    summarize_idle_seconds: float = 120.0  # idle this long after an answer: summarise (0 = off)

    @classmethod
    def from_config(cls, config: Config) -> EngineSettings:
        o = config.ollama
        from assistant.llm.provider import link

        server = link(config)
        return cls(
            host=server.url,
            model=config.chat_model,
            provider=server.provider,
            api_key_env=server.api_key_env,
            api_key_file=server.api_key_file,
            timeout=o.timeout,
            first_token_timeout=o.first_token_timeout,
            think=o.think,
            temperature=o.temperature,
            num_ctx=o.num_ctx,
            context_cap=o.context_window,
            keep_alive=o.keep_alive,
            persona=config.system_prompt(),
            tools=o.tools,
            history_turns=config.chat.history_turns,
            answer_reserve=config.chat.answer_reserve,
            max_answer_tokens=config.chat.max_answer_tokens,
            memory_share=config.memory.budget_share,
            memory_top_k=config.memory.top_k,
            extract_every_turns=config.memory.extract_every_turns,
            top_k=config.retrieval.top_k,
            recall_top_k=config.chat.recall_top_k,
            conversation_share=config.chat.recall_share,
            summaries=config.chat.session_summaries,
            summarize_idle_seconds=float(config.chat.summarize_idle_seconds),
        )


class TurnStream:
    """Async iterator over one turn's events; `cancel()` interrupts the answer."""

    def __init__(self, run: Callable[[Callable[[ChatEvent], None]], Coroutine[Any, Any, None]],
                 on_abort: Callable[[Callable[[ChatEvent], None]], None],
                 saved_in: str | Path | None = None) -> None:
        self._saved_in = saved_in  # the sessions database, named when it cannot be written
        self._queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()  # None: the end
        self._final: Done | Failed | None = None
        self._task = asyncio.get_running_loop().create_task(run(self._emit))
        self._task.add_done_callback(lambda task: self._finish(task, on_abort))

    def _emit(self, event: ChatEvent) -> None:
        if isinstance(event, Done | Failed):
            self._final = event
        self._queue.put_nowait(event)

    def _finish(
        self, task: asyncio.Task[None], on_abort: Callable[[Callable[[ChatEvent], None]], None]
    ) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("chat turn crashed", exc_info=task.exception())
        if self._final is None:
            # Cancelled before the turn could record itself (or crashed): record it now.
            try:
                on_abort(self._emit)
            except Exception as exc:  # e.g. the sessions database is not writable
                log.exception("could not record the turn")
                self._emit(Failed(errors.not_saved(exc, self._saved_in), "", None))
        self._queue.put_nowait(None)

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> ChatEvent:
        event = await self._queue.get()
        if event is None:
            self._queue.put_nowait(None)  # later readers end too
            raise StopAsyncIteration
        return event

    def ready(self) -> list[ChatEvent]:
        """The events already queued, without waiting: a reader slower than the model (a UI
        repainting) takes a whole backlog of tokens in one go instead of one per repaint."""
        events: list[ChatEvent] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event is None:
                self._queue.put_nowait(None)
                break
            events.append(event)
        return events

    def cancel(self) -> None:
        """Stop generating now; the stream then ends with `Done` (interrupted)."""
        self._task.cancel()

    @property
    def done(self) -> bool:
        return self._task.done()

    async def result(self) -> Done | Failed:
        """Consume the remaining events; the final one."""
        async for _ in self:
            pass
        assert self._final is not None
        return self._final

    async def aclose(self) -> None:
        self.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@dataclass
class _TurnState:
    """What one turn has produced so far: enough to store it however it ends."""

    message: str
    started: float
    model: str
    parts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)  # shown apart, never stored as answer
    sources: list[Source] = field(default_factory=list)
    memories: tuple[MemoryItem, ...] = ()
    conversations: list[Recalled] = field(default_factory=list)
    low_confidence: bool = False
    tools: list[ToolUse] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    prompt: Prompt | None = None
    log_id: int | None = None
    truncated: bool = False  # the model stopped at its length limit
    streaming: bool = False
    recorded: bool = False

    @property
    def answer(self) -> str:
        return "".join(self.parts)

    def ms(self, key: str, since: float | None = None) -> None:
        self.timings[key] = round((time.perf_counter() - (since or self.started)) * 1000, 2)


def _estimate_read_tokens(timings: dict[str, Any]) -> None:
    """Without the server's cached count (Ollama's Python client drops
    prompt_eval_cached_count from its reply model), the tokens it read are our estimate of the
    uncached part scaled by its real count of the whole prompt: exact when nothing was cached,
    and marked as approximate (`prompt_read_approx`) for the status line."""
    whole, estimated = timings.get("prompt_eval_count"), timings.get("prompt_tokens")
    new = timings.get("prompt_new_tokens")
    if "prompt_read_tokens" in timings or not (
            isinstance(whole, int) and isinstance(estimated, int) and isinstance(new, int)
            and whole > 0 and estimated > 0 and new > 0):
        return
    timings["prompt_read_tokens"] = min(whole, round(new * whole / estimated))
    timings["prompt_read_approx"] = new < estimated


def _ns_to_ms(value: Any) -> float | None:
    return round(value / 1e6, 2) if isinstance(value, int) and value >= 0 else None


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
        self._session: Session | None = store.get(session_id) if session_id else None
        if self._session is not None and self._session.model:
            self.settings = replace(self.settings, model=self._session.model)
        # Daemon threads: a search or an extraction stuck in a network call must never keep
        # the process alive after the user quits (see assistant/daemon_pool.py).
        self._knowledge_pool = DaemonThreadPool(1, thread_name_prefix="brain-knowledge")
        self._memory_pool = DaemonThreadPool(1, thread_name_prefix="brain-memory")
        self._conversation_pool = DaemonThreadPool(1, thread_name_prefix="brain-conversations")
        self.indexer = ConversationIndexer(conversations, self._conversation_pool)
        self.transport = self._new_transport()
        self._old_transports: list[ChatTransport] = []
        self.jobs = BackgroundJobs()
        self.extraction = MemoryExtraction(store, memory, thread=self._memory_pool,
                                           jobs=self.jobs, complete=self._background_complete)
        self._active: TurnStream | None = None
        # What Ollama's prompt cache holds after our last request: (model, num_ctx, messages)
        self._last_sent: tuple[str, int, list[tuple[str, str]]] | None = None
        self._cache_dirty = False  # a background request replaced the chat's cached prefix
        self._profile = ""  # the profile text of the last turn (for warming the cache)
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the engine runs on
        self._idle_timer: asyncio.TimerHandle | None = None
        self.summarizer = SessionSummarizer(
            store, complete=self._background_complete, model=lambda: self.settings.model,
            written=self.indexer.later)
        self._closed = False

    def _new_transport(self) -> ChatTransport:
        s = self.settings
        return make_transport(Link(s.provider, s.host, s.api_key_env, s.api_key_file),
                              timeout=s.timeout, first_token_timeout=s.first_token_timeout)

    # --- session and model ------------------------------------------------------------------

    @property
    def session(self) -> Session | None:
        """The current session, or None before the first message of a new one (or after the
        session was deleted elsewhere, e.g. from another window)."""
        if self._session is not None:
            try:
                self._session = self.store.get(self._session.id)
            except SessionNotFound:
                self._session = None
        return self._session

    @property
    def model(self) -> str:
        return self.settings.model

    def new_session(self) -> None:
        """Start a new, empty conversation (long-term memory still applies). The one left is
        summarised at the next idle moment."""
        self._session = None
        self._arm_idle_timer_threadsafe()

    def resume(self, session_id: str) -> Session:
        previous = self._session
        self._session = self.store.resolve(session_id)
        if self._session.model:
            self.settings = replace(self.settings, model=self._session.model)
        if previous is not None and previous.id != self._session.id:
            self._arm_idle_timer_threadsafe()
        return self._session

    def turns(self) -> list[Turn]:
        return self.store.turns(self._session.id) if self._session else []

    def available_models(self) -> list[str]:
        """Installed chat models (/api/tags, embedding models left out by their /api/show
        capabilities). Blocking: call from a worker thread."""
        return self.catalog.list_models()

    def set_model(self, name: str, *, check: bool = True) -> None:
        """Switch model for the following turns, keeping the session. Blocking: with `check`,
        asks Ollama that the model is installed and can chat (ChatError if not, and nothing
        changes — a mistyped name never sticks to the session); without, a missing model fails
        the next turn instead (which stores the message)."""
        name = name.strip()
        if not name:
            raise ChatError("model_not_found", "the model name is empty", retryable=False)
        facts = self.catalog.facts(name) if check else None  # raises ChatError
        if facts is not None and facts.capabilities and "completion" not in facts.capabilities:
            raise ChatError(
                "model_not_found", f"{name!r} is not a chat model (it cannot generate text)",
                "choose a chat model from `ollama list`", retryable=False,
            )
        self.settings = replace(self.settings, model=name)
        if self._session is not None:
            self.store.set_model(self._session.id, name)

    def set_persona(self, prompt: str) -> None:
        """Use this system prompt from the next turn on (see config [personas])."""
        if not prompt.strip():
            raise ChatError("protocol", "the system prompt is empty", retryable=False)
        self.settings = replace(self.settings, persona=prompt)

    def configure(self, **changes: Any) -> EngineSettings:
        """Change options for the following turns: temperature, num_ctx, keep_alive, tools,
        history_turns… (any EngineSettings field). Unknown names and bad values are errors."""
        current = {name: getattr(self.settings, name) for name in self.settings.__slots__}
        changes = {
            k: float(v) if isinstance(current.get(k), float) and type(v) is int else v
            for k, v in changes.items()
        }
        for name, value in changes.items():
            if name not in current or name in ("host", "provider", "api_key_env", "api_key_file"):
                raise ChatError("protocol", f"unknown chat option {name!r}", retryable=False)
            old = current[name]
            if old is not None and not isinstance(value, type(old)):
                raise ChatError(
                    "protocol", f"{name} must be a {type(old).__name__}, got {value!r}",
                    retryable=False,
                )
        if changes.get("temperature", 0) < 0 or changes.get("num_ctx", 0) < 0:
            raise ChatError("protocol", "temperature and num_ctx cannot be negative",
                            retryable=False)
        if changes.get("think", "auto") not in ("auto", "on", "off"):
            raise ChatError("protocol", "think must be auto, on or off", retryable=False)
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
        loop = asyncio.get_running_loop()
        self._loop = loop

        def imports() -> None:
            import llama_index.llms.ollama  # noqa: F401  (~1.5 s the first time)

        def touch(source: object) -> None:
            opener = getattr(source, "warm_up", None)
            if opener is not None:
                opener()

        jobs: list[asyncio.Future[Any]] = [
            loop.run_in_executor(None, imports),
            loop.run_in_executor(None, self._facts_quiet, self.settings.model),
        ]
        if self.knowledge is not None:
            jobs.append(loop.run_in_executor(self._knowledge_pool, touch, self.knowledge))
        if self.memory is not None:
            jobs.append(loop.run_in_executor(self._memory_pool, touch, self.memory))
        if self.conversations is not None:  # opens the index and catches up with new turns
            jobs.append(loop.run_in_executor(self._conversation_pool, touch, self.conversations))
        for result in await asyncio.gather(*jobs, return_exceptions=True):
            if isinstance(result, Exception):
                log.info("warm-up: %s", result)

    async def preload(self, *, warm: bool = True) -> float:
        """Load the session's model in Ollama now — an empty chat request with the same
        num_ctx and keep_alive as the turns — so the first question does not pay the load
        (the TUI calls this at start and after a model change). Returns the seconds the load
        took; raises ChatError (e.g. Ollama down, model not pulled). With `warm`, Ollama then
        reads the session's opening (system message, summary, history) as a background job
        — cancelled by a question — so the first turn reads only what is new."""
        model = self.settings.model
        facts = await asyncio.get_running_loop().run_in_executor(None, self._facts, model)
        started = time.perf_counter()
        try:
            await self.transport.preload(model, num_ctx=self._window(facts),
                                         keep_alive=self.settings.keep_alive)
        except ChatError:
            raise
        except Exception as exc:
            raise errors.map_error(exc, host=self.settings.host, model=model,
                                   timeout_s=self.settings.first_token_timeout,
                                   server=errors.server_words(self.settings.provider)) from exc
        elapsed = round(time.perf_counter() - started, 3)
        if warm and (self._active is None or self._active.done):
            # (A question sent meanwhile already has Ollama read the conversation.)
            self._cache_dirty = True
            self.jobs.start(self._warm_cache, disposable=True)
        return elapsed

    def _window(self, facts: ModelFacts | None) -> int:
        """The session's one num_ctx (see models.effective_window)."""
        s = self.settings
        return effective_window(facts, num_ctx=s.num_ctx, cap=s.context_cap)

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
        self._loop = asyncio.get_running_loop()
        self._cancel_idle_timer()
        state = _TurnState(text, time.perf_counter(), self.settings.model)
        self._active = TurnStream(
            lambda emit: self._run(state, emit, use_knowledge, use_memory),
            lambda emit: self._record_interrupted(state, emit),
            saved_in=self.store.path,
        )
        return self._active

    def _check_idle(self) -> None:
        if self._active is not None and not self._active.done:
            raise ChatError(
                "busy", "the previous answer is still being written",
                "wait for it to finish, or cancel it first", retryable=False,
            )

    async def ask(self, message: str, **kwargs: bool) -> Done | Failed:
        """Run a turn to the end and return its final event."""
        return await self.send(message, **kwargs).result()

    def retry(self, **kwargs: bool) -> TurnStream:
        """Send the last message again if its turn failed or was interrupted; the new turn
        replaces it. An answer cut off at the cap (`truncated`) is continued instead: a new
        turn asks the model to go on from where it stopped (the cut answer stays)."""
        self._check_idle()
        turns = self.turns()
        if turns and turns[-1].status == "complete" and turns[-1].truncated:
            return self.send(CONTINUE_MESSAGE, **kwargs)
        if not turns or turns[-1].status == "complete":
            raise ChatError("protocol", "there is no failed, interrupted or cut-off turn to "
                            "retry", retryable=False)
        last = turns[-1]
        self.store.delete_turn(last.id)
        return self.send(last.question, **kwargs)

    async def _run(
        self, state: _TurnState, emit: Callable[[ChatEvent], None],
        use_knowledge: bool, use_memory: bool,
    ) -> None:
        try:
            await self._turn(state, emit, use_knowledge, use_memory)
        except asyncio.CancelledError:
            self._record_interrupted(state, emit)
        except ChatError as exc:
            self._record_failed(state, emit, exc)
        except (UserError, sqlite3.Error) as exc:
            failed = errors.not_saved(exc, self.store.path)
            if state.recorded:  # storing the turn itself failed: it cannot be stored as failed
                emit(Failed(failed, state.answer, None))
            else:
                self._record_failed(state, emit, failed)
        except ContextOverflow as exc:
            self._record_failed(state, emit, errors.context_overflow(str(exc)))
        except Exception as exc:
            error = errors.map_error(
                exc, host=self.settings.host, model=state.model,
                timeout_s=self.settings.timeout, streaming=state.streaming,
                server=errors.server_words(self.settings.provider),
            )
            self._record_failed(state, emit, error)

    async def _turn(
        self, state: _TurnState, emit: Callable[[ChatEvent], None],
        use_knowledge: bool, use_memory: bool,
    ) -> None:
        settings = self.settings
        session = self._ensure_session()
        history = self._history(session)
        user_history = retrieval_history(history, RETRIEVAL_HISTORY_TURNS)

        loop = asyncio.get_running_loop()
        knowledge_on = use_knowledge and self.knowledge is not None
        memory_on = use_memory and self.memory is not None and settings.memory_top_k > 0
        # Earlier conversations are the user's own past words, like memory: off with it.
        conversations_on = (use_memory and self.conversations is not None
                            and settings.recall_top_k > 0)
        # Ollama first, alone: when it is down (or the model is not pulled) the turn fails in
        # milliseconds, before the embedding model is loaded for a search nobody will read.
        # Known facts cost nothing (no thread hop on the answer's path).
        facts = self.catalog.cached(settings.model) or await loop.run_in_executor(
            None, self._facts, settings.model)

        async def nothing() -> None:
            return None

        kind = classify(state.message)
        # Small talk needs nothing from the files: not even the search (message_kind.py).
        searching = knowledge_on and kind != "small_talk"
        results = await asyncio.gather(
            loop.run_in_executor(self._knowledge_pool, self._search, state.message, user_history)
            if searching else nothing(),
            loop.run_in_executor(self._memory_pool, self._recall, state.message, session.id)
            if memory_on else nothing(),
            loop.run_in_executor(self._conversation_pool, self._recall_conversations,
                                 state.message, session.id)
            if conversations_on else nothing(),
            return_exceptions=True,
        )
        searched, recalled_t, recollection = results
        if isinstance(searched, BaseException):  # knowledge's error first, as before
            raise searched
        if isinstance(recalled_t, BaseException):
            raise recalled_t
        if isinstance(recollection, BaseException):
            raise recollection
        if recollection is not None:
            state.timings["conversations_ms"] = recollection.timings.get("total_ms", 0.0)
        retrieval: Retrieval | None = None
        recalled: list[MemoryItem] | None = None
        noted: MemoryItem | None = None
        profile = ""
        if searched is not None:
            retrieval, state.timings["retrieval_ms"] = searched
            state.log_id = retrieval.log_id
            retrieval = material_for(kind, retrieval)
        elif knowledge_on:
            retrieval = Retrieval(state.message, (), low_confidence=False)
        refused: tuple[str, ...] = ()
        profile_items: tuple[MemoryItem, ...] = ()
        if recalled_t is not None:
            recalled, state.timings["recall_ms"], noted, refused = recalled_t
            profile_items = tuple(m for m in recalled if m.memory_id == PROFILE_MEMORY_ID)
            recalled = [m for m in recalled if m.memory_id != PROFILE_MEMORY_ID]
            profile = profile_items[0].text if profile_items else ""
            self._profile = profile
        state.ms("prepare_ms")

        if noted is not None or refused:
            self._acknowledge(state, emit, noted, refused, retrieval)
            return

        window = self._window(facts)
        capabilities = facts.capabilities if facts is not None else ()
        think = think_value(settings.think, capabilities)
        tools_on = settings.tools and facts is not None and facts.supports_tools
        t_assembly = time.perf_counter()
        prompt = assemble(
            PromptInputs(
                persona=settings.persona,
                message=state.message,
                memories=recalled,
                retrieval=retrieval,
                summary=session.summary,
                history=[history_turn(t) for t in history],
                tools=self._tool_specs() if tools_on else (),
                profile=profile,
                conversations=recollection.items if recollection is not None else (),
                asks=kind == "question",
            ),
            window=window,
            answer_reserve=settings.answer_reserve,
            memory_share=settings.memory_share,
            knowledge_share=settings.knowledge_share,
            conversation_share=settings.conversation_share,
            counter=self.calibration.counter(settings.model),
        )
        state.ms("assembly_ms", t_assembly)
        state.prompt = prompt
        state.sources = list(prompt.sources)
        state.conversations = list(prompt.conversations)
        state.memories = profile_items + prompt.memories
        if prompt.memories and self.memory is not None:
            self._mark_used(self.memory, [m.memory_id for m in prompt.memories])
        state.low_confidence = bool(retrieval and retrieval.low_confidence)
        state.timings["window"] = window
        state.timings["prompt_tokens"] = prompt.total_tokens
        # Counted only once the request is out (tokenizing the new material takes a few ms).
        last_sent = self._last_sent
        new_tokens = _once(lambda: self._uncached_tokens(prompt.messages, window, last_sent))
        emit(Retrieved(
            prompt.sources, state.memories, state.low_confidence,
            knowledge_used=retrieval is not None, memory_used=recalled is not None,
            log_id=state.log_id, noted=noted,
            empty_index=bool(retrieval and retrieval.empty_index),
            warnings=(retrieval.warnings if retrieval is not None else ()) + refused
            + (recollection.warnings if recollection is not None else ()),
            conversations=prompt.conversations, conversations_used=recollection is not None,
            time_range=recollection.time_range if recollection is not None else None,
            time_range_applied=recollection.applied if recollection is not None else True,
        ))

        llm = self.transport.llm(model=settings.model, window=window, think=think,
                                 temperature=settings.temperature,
                                 keep_alive=settings.keep_alive,
                                 num_predict=answer_cap(settings.max_answer_tokens,
                                                        prompt.budget))
        messages = [_chat_message(m) for m in prompt.messages]
        search = self._tool_search if knowledge_on else None
        remember = (
            (lambda text, kind: self._tool_remember(text, kind, session.id, state.message))
            if memory_on else None
        )
        search_conversations = (
            (lambda query, since, until, k: self._tool_conversations(
                query, since, until, k, session.id))
            if conversations_on else None
        )
        pools = {"search_knowledge": self._knowledge_pool,
                 "search_conversations": self._conversation_pool}
        rounds = MAX_TOOL_ROUNDS if tools_on else 0
        untagged = think is False and facts is not None and facts.thinking_only

        def saw_untagged() -> None:
            if think is not True:
                self.catalog.saw_untagged_reasoning(settings.model)

        while True:
            reader = ReplyReader(
                emit=emit, sink=state, timeout=settings.timeout,
                first_token_timeout=settings.first_token_timeout, untagged=untagged,
                probe=self.transport.running,
                wait=WaitInfo(settings.host, settings.model, new_tokens, window,
                              errors.server_words(settings.provider)),
                on_untagged=saw_untagged,
            )
            kwargs: dict[str, Any] = {"tools": self._tool_specs()} if rounds > 0 else {}
            if "overhead_ms" not in state.timings:
                state.ms("overhead_ms")  # enter → the request leaves for Ollama
            end = await reader.read(await llm.astream_chat(messages, **kwargs))
            if not messages[len(prompt.messages):]:  # the first round: the prompt as assembled
                self._calibrate(settings.model, prompt, kwargs.get("tools", ()), end.raw,
                                window)
            self._note_stats(state, end.raw)
            # The last round decides: a tool round cut short is followed by a full answer.
            state.truncated = end.truncated
            if not end.tool_calls:
                break
            calls = end.tool_calls
            rounds -= 1
            messages.append(_assistant_tool_message(calls))
            for name, arguments in calls:
                room = self._room_left(prompt, messages)
                outcome = await loop.run_in_executor(
                    pools.get(name, self._memory_pool),
                    partial(run_tool, name, arguments, next_n=len(state.sources) + 1,
                            search=search, remember=remember, known=state.sources,
                            max_tokens=room, search_conversations=search_conversations,
                            recalled=state.conversations),
                )
                state.tools.append(outcome.use)
                state.sources.extend(outcome.sources)
                state.conversations.extend(outcome.conversations)
                emit(ToolCalled(outcome.use, outcome.sources, outcome.conversations))
                messages.append(_tool_message(name, outcome.content))
        if state.truncated:
            log.info("answer stopped at the length limit")
        state.timings["prompt_new_tokens"] = new_tokens()
        _estimate_read_tokens(state.timings)
        self._last_sent = (settings.model, window, [
            *((m.role, m.content) for m in prompt.messages), ("assistant", state.answer)])
        state.ms("total_ms")
        turn = self._store(state, "complete")
        emit(Done(turn))
        self._after_turn(turn.session_id, prompt.dropped_turns)

    def _acknowledge(
        self, state: _TurnState, emit: Callable[[ChatEvent], None],
        noted: MemoryItem | None, refused: tuple[str, ...], retrieval: Retrieval | None,
    ) -> None:
        """An explicit "remember that …" is done, not asked: confirm it (or say why it was
        refused, e.g. a secret) directly instead of sending the model a question it would try
        to answer from documents."""
        if noted is not None:
            reply = REMEMBERED.format(text=noted.text)
        else:
            reason = refused[0]
            while reason.lower().startswith("not remembered: "):
                reason = reason[len("not remembered: "):]
            reply = NOT_REMEMBERED.format(reason=reason)
        emit(Retrieved((), (noted,) if noted is not None else (), False,
                       knowledge_used=False, memory_used=True, log_id=state.log_id,
                       noted=noted,
                       warnings=(retrieval.warnings if retrieval is not None else ()) + refused))
        state.memories = (noted,) if noted is not None else ()  # the memory in play
        state.parts.append(reply)
        emit(Token(reply))
        state.ms("total_ms")
        turn = self._store(state, "complete")
        emit(Done(turn))
        self._after_turn(turn.session_id, 0)

    def _uncached_tokens(self, messages: Sequence[PromptMessage], window: int,
                         last: tuple[str, int, list[tuple[str, str]]] | None) -> int:
        """About how many prompt tokens Ollama has to read: those after the longest common
        prefix (in whole messages) with what our previous request (`last`) left in its
        cache."""
        start = 0
        if last is not None and last[0] == self.settings.model and last[1] == window:
            for sent, message in zip(last[2], messages, strict=False):
                if sent != (message.role, message.content):
                    break
                start += 1
        count = self.calibration.counter(self.settings.model)
        return sum(count(m.content) + MESSAGE_OVERHEAD for m in messages[start:])

    def _calibrate(self, model: str, prompt: Prompt, tools: Sequence[Any],
                   raw: dict[str, Any], window: int) -> None:
        """One sample for the model's token factors: what the server counted for the prompt
        as we assembled it. A prompt the server had to cut (it reports at most the window)
        says nothing about the tokenizer."""
        real = raw.get("prompt_eval_count")
        if not isinstance(real, int) or isinstance(real, bool) or real >= window - 1:
            return
        split = prompt_split((m.content for m in prompt.messages), tools)
        self.calibration.observe(model, split, real)

    @staticmethod
    def _note_stats(state: _TurnState, raw: dict[str, Any]) -> None:
        """What the server reports in its last chunk. prompt_eval_count is the whole prompt
        (cache included, Ollama's llm/llama_server.go promptEvalCount; usage.prompt_tokens);
        the cached part is Ollama's prompt_eval_cached_count or an OpenAI-compatible server's
        cached_tokens. Their difference, summed over the rounds, is `prompt_read_tokens`: the
        real count of what the server read, shown after the reply where the estimate was
        shown while waiting (else estimated at the turn's end: _estimate_read_tokens)."""
        whole = raw.get("prompt_eval_count")
        if isinstance(whole, int):
            state.timings["prompt_eval_count"] = whole
        if isinstance(raw.get("eval_count"), int):
            state.timings["eval_count"] = state.timings.get("eval_count", 0) + raw["eval_count"]
        cached = raw.get("cached_tokens", raw.get("prompt_eval_cached_count"))
        if isinstance(cached, int) and not isinstance(cached, bool):
            state.timings["cached_tokens"] = cached
        if isinstance(whole, int) and isinstance(cached, int) and 0 <= cached <= whole:
            state.timings["prompt_read_tokens"] = (
                state.timings.get("prompt_read_tokens", 0) + whole - cached)
        for key, out in (("prompt_eval_duration", "prompt_eval_ms"),
                         ("load_duration", "load_ms")):
            value = _ns_to_ms(raw.get(key))
            if value is not None:
                state.timings[out] = state.timings.get(out, 0.0) + value

    def _room_left(self, prompt: Prompt, messages: list[Any]) -> int:
        """Tokens still free for tool results, after the prompt and earlier tool rounds."""
        count = self.calibration.counter(self.settings.model)
        extra = sum(
            count(m.content or "") + MESSAGE_OVERHEAD
            for m in messages[len(prompt.messages):]
        )
        budget = prompt.budget
        return max(0, budget.window - budget.answer_reserve - prompt.total_tokens - extra)

    # --- the stages (blocking, run on worker threads) ----------------------------------------

    def _facts(self, model: str) -> ModelFacts | None:
        try:
            return self.catalog.facts(model)
        except ChatError as exc:
            if exc.kind in ("model_not_found", "unavailable"):
                raise  # the chat request would fail the same way: say so now
            log.warning("could not read model facts for %s: %s", model, exc)
            return None

    def _search(self, message: str, history: Sequence[str]) -> tuple[Retrieval, float]:
        assert self.knowledge is not None
        start = time.perf_counter()
        try:
            result = self.knowledge.search(message, history=history, top_k=self.settings.top_k)
        except Exception as exc:
            raise errors.stage_failed("knowledge", "knowledge search", exc) from exc
        return result, round((time.perf_counter() - start) * 1000, 2)

    def _recall(
        self, message: str, session_id: str
    ) -> tuple[list[MemoryItem], float, MemoryItem | None, tuple[str, ...]]:
        """(memories, ms, the explicit memory stored, why one was refused)."""
        assert self.memory is not None
        start = time.perf_counter()
        noted = None
        refused: tuple[str, ...] = ()
        try:
            noted = self.memory.note(message, session_id=session_id)
        except UserError as exc:  # e.g. a secret in "remember my password is …": not stored
            refused = (f"not remembered: {exc.args[0] if exc.args else exc}",)
        except Exception:
            log.exception("storing an explicit memory failed")
        try:
            result = self.memory.recall(message, self.settings.memory_top_k)
        except Exception as exc:
            raise errors.stage_failed("memory", "memory recall", exc) from exc
        elapsed = round((time.perf_counter() - start) * 1000, 2)
        return list(result), elapsed, noted, refused

    def _mark_used(self, memory: MemorySource, ids: list[str]) -> None:
        """Off the answer's path, on the memory thread (SQLite); a failure is only logged."""
        def done(future: asyncio.Future[None]) -> None:
            if not future.cancelled() and future.exception() is not None:
                log.warning("could not mark memories as used: %s", future.exception())

        asyncio.get_running_loop().run_in_executor(
            self._memory_pool, memory.used, ids
        ).add_done_callback(done)

    def _tool_search(self, query: str, top_k: int) -> Retrieval:
        assert self.knowledge is not None
        return self.knowledge.search(query, top_k=top_k)

    def _recall_conversations(self, message: str, session_id: str) -> Recollection:
        assert self.conversations is not None
        start = time.perf_counter()
        try:
            found = self.conversations.recall(message, session_id=session_id,
                                              top_k=self.settings.recall_top_k)
        except Exception as exc:
            # A convenience, not the question's substance: the answer goes on without it and
            # says so (knowledge and memory failures stop the turn; the user chose those).
            log.warning("recalling earlier conversations failed: %s", exc)
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            found = Recollection(message, (), warnings=(
                f"earlier conversations could not be searched: {reason}",))
        elapsed = round((time.perf_counter() - start) * 1000, 2)
        return replace(found, timings={**found.timings, "total_ms": elapsed})

    def _tool_conversations(self, query: str, since: str | None, until: str | None, top_k: int,
                            session_id: str) -> Recollection:
        assert self.conversations is not None
        return self.conversations.search(query, since=since, until=until,
                                         session_id=session_id, top_k=top_k)

    def _tool_remember(self, text: str, kind: str, session_id: str, message: str) -> str:
        """The `remember` tool: grounded in what the user said in this session (all of it, not
        only the turns still in the prompt), the current message included."""
        assert self.memory is not None
        said = [t.question for t in self.store.turns(session_id)] + [message]
        return self.memory.remember(text, kind, session_id=session_id, said=said)

    # --- storing -----------------------------------------------------------------------------

    def _history(self, session: Session | None) -> list[Turn]:
        if session is None:
            return []
        return [
            t for t in self.store.turns(session.id, after_seq=session.summary_through)
            if t.status != "failed"
        ]

    def _ensure_session(self) -> Session:
        session = self.session
        if session is None:  # new, or deleted meanwhile: the message starts a new one
            session = self._session = self.store.create(model=self.settings.model)
        return session

    def _store(self, state: _TurnState, status: str, error: str = "") -> Turn:
        session = self._ensure_session()
        # Only the answer's own words cite: a recited `[2] path:lines` header does not.
        sources, invented = mark_cited(state.sources,
                                       without_recital(state.answer, state.sources))
        if invented:
            log.info("answer cites sources that do not exist: %s", invented)
        recalled, invented = mark_recalled(state.conversations, state.answer)
        if invented:
            log.info("answer cites earlier conversations that do not exist: %s", invented)
        state.recorded = True
        stored = self.store.add_turn(
            session.id,
            state.message,
            state.answer,
            status=status,
            model=state.model,
            error=error,
            low_confidence=state.low_confidence,
            sources=sources,
            memories=state.memories,
            tools=state.tools,
            timings=state.timings,
            log_id=state.log_id,
            truncated=state.truncated,
            conversations=recalled,
        )
        if state.answer or status != "failed":
            # A turn that failed before any answer (Ollama down) has nothing to recall, and
            # indexing it would make the error wait for the conversation index's catch-up
            # (Chroma and the model loading): `brain ask` must fail at once (issue 15).
            self.indexer.later(session.id)
        # The live items carry the retriever's evidence (`data`, `hit`) that is not stored
        # (and a recalled conversation deleted meanwhile is shown as stored: blanked).
        live = {r.n: r for r in recalled}
        conversations = tuple(
            live[c.n] if c.n in live and not c.item.deleted else c for c in stored.conversations
        )
        return replace(stored, sources=sources, memories=tuple(state.memories),
                       conversations=conversations)

    def _record_interrupted(self, state: _TurnState, emit: Callable[[ChatEvent], None]) -> None:
        if state.recorded:
            return
        state.ms("total_ms")
        emit(Done(self._store(state, "interrupted")))

    def _record_failed(
        self, state: _TurnState, emit: Callable[[ChatEvent], None], error: ChatError
    ) -> None:
        if state.recorded:
            return
        state.ms("total_ms")
        turn = self._store(state, "failed", error=str(error.message))
        emit(Failed(error, state.answer, turn))

    # --- background: memory extraction and the rolling summary ------------------------------

    def _after_turn(self, session_id: str, dropped: int) -> None:
        """Schedule what follows a reply: periodic memory extraction, folding old turns into
        the summary, summaries of sessions closed earlier; and the idle timer. One background
        job at a time, cancelled by the next question; whatever it leaves, the next turn's job
        picks up. Never delays the reply (this runs after `Done` was emitted)."""
        self.jobs.start(lambda: self._background_job(session_id, dropped))
        self._arm_idle_timer()

    # --- idle time: session summaries -------------------------------------------------------

    def _arm_idle_timer(self) -> None:
        """(Re)start the countdown to the idle work; on the engine's loop."""
        self._cancel_idle_timer()
        delay = self.settings.summarize_idle_seconds
        if not self.settings.summaries or delay <= 0:
            return
        self._idle_timer = asyncio.get_running_loop().call_later(delay, self._on_idle)

    def _arm_idle_timer_threadsafe(self) -> None:
        """`_arm_idle_timer` from any thread (new_session/resume may run on a worker)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._arm_idle_timer)

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _on_idle(self) -> None:
        self._idle_timer = None
        if self._active is not None and not self._active.done:
            return  # a question is being answered: its end re-arms the timer
        if not self.jobs.start(self._idle_job):
            self._arm_idle_timer()  # a background job is still running: wait another period

    async def _idle_job(self) -> None:
        await self._summarize_sessions(include_current=True)
        await self._warm_cache()

    async def _summarize_sessions(self, *, include_current: bool) -> None:
        """Summaries of the sessions that need one (the current one too, when idle)."""
        if not self.settings.summaries:
            return
        current = self._session.id if self._session is not None else None
        await self.summarizer.catch_up(exclude=None if include_current else current)

    async def summarize(self, timeout: float | None = None) -> bool:
        """Summarise the current session now, if it needs it (`brain ask` calls this at its
        end): True when a summary was written. Runs as a background job (a question sent
        meanwhile cancels it); on timeout it is cancelled and left to a later idle moment."""
        await self.drain(timeout)
        session = self._session
        if session is None or not self.settings.summaries:
            return False
        outcome: list[bool] = []

        async def job() -> None:
            outcome.append(await self.summarizer.write(session.id))

        if not self.jobs.start(job):  # another job is running
            return False
        await self.jobs.wait(timeout)
        if self.jobs.running:
            self.jobs.yield_now()
            await self.jobs.wait(5)
        await self.indexer.wait(timeout)
        return bool(outcome and outcome[0])

    def _tool_specs(self) -> list[dict[str, Any]]:
        """The same list every turn (and in the warm-up prompt): the tools are part of the
        prompt prefix Ollama caches."""
        return tool_specs(conversations=self.conversations is not None)

    async def catch_up(self, timeout: float | None = None) -> None:
        """Fold the current session's old turns into its rolling summary, as the job after a
        reply does — for a process that did not answer the turn (the detached `brain sessions
        finish` after `brain ask`). A background job already running is waited for instead."""
        session = self._session
        if session is not None and not self.jobs.running:
            self.jobs.start(lambda: self._fold_session(session.id, 0))
        await self.jobs.wait(timeout)

    async def _background_job(self, session_id: str, dropped: int) -> None:
        every = self.settings.extract_every_turns
        extraction = self.extraction
        if every > 0 and len(extraction.unextracted(session_id)) >= every:
            await extraction.extract(session_id, extraction.unextracted(session_id))
        await self._fold_session(session_id, dropped)
        await self._summarize_sessions(include_current=False)
        await self._warm_cache()

    async def _fold_session(self, session_id: str, dropped: int) -> None:
        session = self.store.get(session_id)
        pending = self.store.turns(session_id, after_seq=session.summary_through)
        fold = turns_to_fold(pending, keep=self.settings.history_turns, dropped=dropped,
                             batch=self.settings.fold_batch)
        while fold:
            step = bounded(fold, count_tokens)
            await self._fold(session, step)
            session = self.store.get(session_id)
            fold = [t for t in fold if t.seq > session.summary_through]
            if step and session.summary_through < step[-1].seq:
                break  # the summary could not be written: retry after the next turn

    async def _warm_cache(self) -> None:
        """After background requests (Ollama keeps one prompt in its cache, and theirs replaced
        the chat's), have Ollama read the conversation's opening again — what the next turn
        will start with — while the user is still reading: one generated token, cancelled if
        a question comes first. The next turn then reads only the last answer and what is
        new, instead of the whole conversation."""
        if not self._cache_dirty:
            return
        settings = self.settings
        loop = asyncio.get_running_loop()
        facts = await loop.run_in_executor(None, self._facts_quiet, settings.model)
        window = self._window(facts)
        messages = self._opening(facts, window)
        think = think_value(settings.think, facts.capabilities if facts is not None else ())
        await self.transport.complete(
            settings.model, [{"role": m.role, "content": m.content} for m in messages],
            num_ctx=window, keep_alive=settings.keep_alive, num_predict=1, think=think,
            temperature=settings.temperature,
        )
        self._cache_dirty = False
        self._last_sent = (settings.model, window, [(m.role, m.content) for m in messages])

    def _opening(self, facts: ModelFacts | None, window: int) -> list[PromptMessage]:
        """What the next turn's prompt will start with: the system message, the summary, the
        recent turns with the last answer, then an empty user message — the next turn's own
        message opens the same way, so the server's cache holds everything before its text.
        (Ending on the answer instead would have it taken as a reply to continue; ending on
        the last question, as before, left the last answer to be read again by every
        `ask -c`: 53% of a real third turn cached.)"""
        session = self.session
        settings = self.settings
        tools_on = settings.tools and facts is not None and facts.supports_tools
        history = self._history(session)
        prompt = assemble(
            PromptInputs(
                persona=settings.persona, message="", memories=None, retrieval=None,
                summary=session.summary if session is not None else "",
                history=[history_turn(t) for t in history],
                tools=self._tool_specs() if tools_on else (), profile=self._profile,
            ),
            window=window, answer_reserve=settings.answer_reserve,
            memory_share=settings.memory_share, knowledge_share=settings.knowledge_share,
            counter=self.calibration.counter(settings.model),
        )
        # The new message's place, empty: without its material (the turn's own), which
        # would not match what the next turn sends.
        return [*prompt.messages[:-1], PromptMessage("user", "")]

    async def _background_complete(self, messages: list[dict[str, str]],
                                   schema: dict[str, Any], num_predict: int) -> str:
        """A background request as the chat model's session wants it: the session's model
        and num_ctx (no reload), think off, a JSON schema (so even a thinking-only model
        answers at once), a capped reply."""
        model = self.settings.model
        facts = await asyncio.get_running_loop().run_in_executor(None, self._facts_quiet, model)
        self._cache_dirty = True  # this request replaces the chat's prefix in Ollama's cache
        completion = await self.transport.complete(
            model, messages, num_ctx=self._window(facts), keep_alive=self.settings.keep_alive,
            schema=schema, num_predict=num_predict, think=False,
        )
        if completion.done_reason == "length":
            log.info("background reply cut at %d tokens", num_predict)
        return completion.content

    async def _fold(self, session: Session, fold: list[Turn]) -> None:
        # Facts first (nothing personal should be lost to the summary) — but a failed
        # extraction does not hold the fold back forever: it keeps its own pointer and is
        # retried after later turns and when the user is idle, from the turns stored verbatim.
        extraction = self.extraction
        if not await extraction.extract(session.id,
                                        extraction.unextracted(session.id, fold[-1].seq)):
            log.info("folding without extraction; it will be retried")
        reply = await self._background_complete(
            [{"role": "system", "content": SUMMARY_SYSTEM},
             {"role": "user", "content": summary_request(session.summary, fold)}],
            SUMMARY_SCHEMA, SUMMARY_NUM_PREDICT,
        )
        summary = clean_summary(reply)
        if summary:
            self.store.set_summary(session.id, summary, fold[-1].seq)

    async def finish(self, timeout: float | None = None) -> bool:
        """At the end of a one-shot `brain ask`: wait for background work, then extract
        memories from the current session's turns not yet extracted. False when extraction
        failed (the turns stay pending); TimeoutError past `timeout`. The TUI never calls
        it: quitting must not wait for a model call (see extract_pending)."""
        self.jobs.drop_disposable()
        await self.drain(timeout)
        if self._session is None:
            return True
        return await asyncio.wait_for(
            self.extraction.extract(self._session.id,
                                    self.extraction.unextracted(self._session.id)),
            timeout,
        )

    async def keep_cached(self, timeout: float | None = None) -> bool:
        """At the end of `brain ask`, after its extraction and session summary: those
        requests replaced the conversation in the server's prompt cache, so have it read the
        conversation's opening again now (one generated token) — the next `brain ask -c` then
        reads only the last answer and its new message instead of the whole history. Bounded
        by `timeout` (then cancelled); True when the opening was read."""
        await self.drain(timeout)
        if not self._cache_dirty or self.session is None:
            return False
        if not self.jobs.start(self._warm_cache):
            return False
        await self.jobs.wait(timeout)
        if self.jobs.running:
            self.jobs.yield_now()
            return False
        return not self._cache_dirty

    def pending_extraction(self) -> int:
        """How many turns `extract_pending` would read: the current session's and those of the
        other sessions left pending (extraction.PENDING_SESSIONS at most). Blocking (SQLite)."""
        if self.memory is None:
            return 0
        extraction = self.extraction
        return sum(len(extraction.unextracted(sid))
                   for sid in extraction.pending_sessions(self._current_id()))

    async def extract_pending(self, timeout: float | None = None) -> int:
        """Memory extraction now over the turns not extracted yet — the current session's,
        then those other sessions left pending (a quit does not extract: it would hold the
        user's shell for a model call). The TUI calls it after memory.extract_idle_seconds
        without input. Returns the number of turns it went through; it stops at the first
        failure, or when the user sends a question (the rest stays pending)."""
        await self.drain(timeout)
        if self.memory is None or self.jobs.running:
            return 0
        work = [(sid, turns) for sid in self.extraction.pending_sessions(self._current_id())
                if (turns := self.extraction.unextracted(sid))]
        if not work:
            return 0
        done: list[int] = []

        async def job() -> None:
            for session_id, turns in work:
                if not await self.extraction.extract(session_id, turns):
                    break
                done.append(len(turns))
            await self._warm_cache()

        self.jobs.start(job)
        await self.jobs.wait(timeout)
        return sum(done)

    def _current_id(self) -> str | None:
        return self._session.id if self._session is not None else None

    def _facts_quiet(self, model: str) -> ModelFacts | None:
        try:
            return self.catalog.facts(model)
        except ChatError:
            return None

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for background work (extraction, the rolling summary, session summaries,
        indexing the turns) to finish."""
        await self.jobs.wait(timeout)
        await self.indexer.wait(timeout)

    async def aclose(self, *, patience: float | None = None,
                     then: Callable[[], object] | None = None) -> None:
        """Cancel background work, close the connections to Ollama, then close knowledge,
        memory and `then` (the session store, which the conversation index shares) on the
        threads that use them, after whatever job is running there. `patience`: how long to
        wait for those (None: until done). Quitting waits a moment only: a close left behind
        runs when its thread's job ends, or never if the process ends first — which SQLite
        survives (WAL, transactions), and the conversation index catches up at the next sync."""
        if self._closed:
            return
        self._closed = True
        self._cancel_idle_timer()
        await self.jobs.aclose()
        await self.indexer.wait(5 if patience is None else patience)
        for transport in [*self._old_transports, self.transport]:
            await transport.aclose()
        loop = asyncio.get_running_loop()
        closes = [
            (pool, close)
            for pool, source in ((self._knowledge_pool, self.knowledge),
                                 (self._memory_pool, self.memory),
                                 (self._conversation_pool, self.conversations))
            if (close := getattr(source, "close", None)) is not None
        ]
        if then is not None:
            closes.append((self._conversation_pool, then))
        closing = [loop.run_in_executor(pool, close) for pool, close in closes]
        for pool in (self._knowledge_pool, self._memory_pool, self._conversation_pool):
            pool.shutdown(wait=False)  # the closes queued above still run
        if closing:
            await asyncio.wait(closing, timeout=patience)
        for task in closing:
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("closing the chat's stores failed", exc_info=task.exception())


def _once(compute: Callable[[], int]) -> Callable[[], int]:
    """`compute`, run at the first call only."""
    done: list[int] = []

    def value() -> int:
        if not done:
            done.append(compute())
        return done[0]

    return value


def _chat_message(message: PromptMessage) -> Any:
    from llama_index.core.llms import ChatMessage

    return ChatMessage(role=message.role, content=message.content)


def _assistant_tool_message(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """The assistant's tool-call message sent back: the calls only, never its reasoning."""
    from llama_index.core.base.llms.types import TextBlock, ToolCallBlock
    from llama_index.core.llms import ChatMessage

    blocks: list[Any] = [TextBlock(text="")]
    blocks += [ToolCallBlock(tool_name=name, tool_kwargs=args) for name, args in calls]
    return ChatMessage(role="assistant", blocks=blocks)


def _tool_message(name: str, content: str) -> Any:
    from llama_index.core.llms import ChatMessage

    return ChatMessage(role="tool", content=content, additional_kwargs={"tool_name": name})
