"""The adapter from the UI to the core (`assistant/`, `indexing/`): one small class per domain.

Every method blocks and runs in a worker thread. Core types are turned into the view types of
`tui/views.py` here and nowhere else, so a change in the core touches this file only. Heavy
modules (torch, Chroma, LlamaIndex) are imported inside methods: importing this file is cheap.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.context import AppContext
from assistant.errors import UserError
from indexing.lazy import Lazy
from tui.views import (
    ChatEvent,
    Failed,
    Finished,
    FolderView,
    MemoryEvent,
    MemoryView,
    ModelView,
    OllamaStatus,
    Retrieved,
    SearchResult,
    SessionView,
    SourceView,
    SyncProgress,
    SyncSummary,
    Token,
    TurnView,
)

if TYPE_CHECKING:
    from assistant.chat.sessions import SessionStore
    from assistant.chat.turn import KnowledgeItem, MemoryItem, Source, Turn
    from assistant.memory.model import Memory
    from assistant.memory.store import MemoryStore
    from assistant.retrieval.hit import SearchHit
    from assistant.retrieval.hybrid import HybridRetriever
    from indexing.knowledge import KnowledgeBase

STATUS_TIMEOUT = 3.0  # seconds: the live Ollama check must not hang a worker for long
IDLE_EXTRACT_TIMEOUT = 120.0  # seconds: an idle extraction gives up; the turns stay pending


def _iso(value: datetime | float | str | None) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, str):
        return value[:16].replace("T", " ")
    if isinstance(value, float | int):
        value = datetime.fromtimestamp(value).astimezone()
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def _relpath(source: str, roots: Sequence[str]) -> str:
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if source.startswith(prefix):
            return source[len(prefix):]
    return source


# --- Ollama -------------------------------------------------------------------------------------

class OllamaAdapter:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx

    def _client(self, timeout: float) -> Any:
        from assistant.ollama_client import OllamaClient

        return OllamaClient(self.ctx.config.ollama.host, timeout=timeout)

    def status(self, model: str) -> OllamaStatus:
        from assistant.ollama_client import OllamaError, model_matches

        try:
            with self._client(STATUS_TIMEOUT) as client:
                version = client.version()
                installed = [m.name for m in client.list_models()]
        except OllamaError as exc:
            return OllamaStatus(False, message=str(exc).split("\n")[0], hint=exc.hint or "")
        if not any(model_matches(model, name) for name in installed):
            return OllamaStatus(
                False, version, f"the chat model {model!r} is not installed in Ollama",
                f"run `ollama pull {model}`", model_missing=True,
            )
        return OllamaStatus(True, version)

    def models(self) -> list[ModelView]:
        with self._client(self.ctx.config.ollama.timeout) as client:
            models = client.list_models()
        return [ModelView(m.name, m.size, m.family) for m in models]


# --- knowledge ----------------------------------------------------------------------------------

class KnowledgeAdapter:
    """Folders, sync, search and watch over one KnowledgeBase (opened once, with the model)."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        # Search goes through `open_retriever` like every other caller: the wrong-model check
        # included, and the retriever's own index and log closed with it.
        self._retriever = Lazy(lambda: _open_retriever(ctx), close=_close_retriever)
        # For writes (add, sync) when the retriever cannot open: e.g. the index was built with
        # another model, which only a sync (re-embedding) can fix.
        self._writer = Lazy(lambda: _open_knowledge(ctx, True), close=_close_kb)
        # Without the model: folders and stats work even when the model cannot load.
        self._light = Lazy(lambda: _open_knowledge(ctx, False), close=_close_kb)

    def warm_up(self) -> None:
        from indexing.embedder import preload

        # The model (onnxruntime, GIL released) loads while the index opens; open_retriever
        # connects Chroma in the background only if the index's dense snapshot cannot answer
        # (importing chromadb holds the GIL for a second and would slow everything else).
        preload(self.ctx.embedder())
        self.retriever()
        # Models load lazily on the first uncached text; queries are never disk-cached, so
        # this loads the model now, not when the user asks the first question.
        self.ctx.embedder().embed_query("warm up")

    def retriever(self) -> HybridRetriever:
        return self._retriever.get()

    def kb(self) -> KnowledgeBase:
        """The index with the embedding model: the retriever's when it is open."""
        retriever = self._retriever.peek()
        return retriever.kb if retriever is not None else self._writer.get()

    def light(self) -> KnowledgeBase:
        """The index without the embedding model, so listing works even if it cannot load."""
        retriever = self._retriever.peek()
        if retriever is not None:
            return retriever.kb
        writer = self._writer.peek()
        return writer if writer is not None else self._light.get()

    def stats(self) -> tuple[int, int]:
        return self.light().stats()

    def folders(self) -> list[FolderView]:
        return [
            FolderView(f.path, f.files, f.chunks, _iso(f.last_sync))
            for f in self.light().folders()
        ]

    def add_folder(self, path: Path) -> FolderView:
        added = self.kb().add_folder(path)
        if added.status == "inside":
            raise UserError(f"{added.path} is already indexed as part of {added.parent}")
        if added.status == "already":
            raise UserError(f"{added.path} is already indexed", hint="press s to re-sync it")
        return FolderView(added.path, 0, 0)

    def remove_folder(self, path: str) -> None:
        from assistant.erasure.actions import remove_folder

        remove_folder(self.ctx, self.light(), path)

    def sync(
        self,
        folders: Sequence[str] | None,
        *,
        rebuild: bool,
        progress: Callable[[SyncProgress], None],
    ) -> SyncSummary:
        from assistant.knowledge_service import sync_settings
        from indexing.progress import Phase

        def relay(p: Any) -> None:
            if p.phase is Phase.repairing:
                progress(SyncProgress(p.chunks_done, p.chunks_total, p.path, "repairing"))
            else:
                progress(SyncProgress(p.files_done, p.files_total, p.path, str(p.phase)))

        report = self.kb().sync(
            sync_settings(self.ctx.config), folders=folders, rebuild=rebuild, progress=relay
        )
        skipped = tuple(
            (path, f"{reason}: {detail}" if detail else reason)
            for reason, items in report.skipped.items()
            for path, detail in items
        )
        return SyncSummary(len(report.added), len(report.updated), len(report.removed),
                           report.unchanged, skipped, report.seconds)

    def search(self, query: str) -> SearchResult:
        result = self.retriever().search(query)
        roots = [f.path for f in self.kb().folders()]
        sources = tuple(hit_view(h, roots, self.ctx) for h in result.hits)
        log_id = str(result.log_id) if result.log_id is not None else None
        return SearchResult(query, sources, result.low_confidence, log_id,
                            warnings=result.warnings)

    def watch(self, on_change: Callable[[str], None], stop: threading.Event) -> None:
        from assistant.knowledge_service import open_knowledge, sync_settings
        from indexing.watch import FolderWatcher

        cfg = self.ctx.config.indexing
        # Its own connection: a long sync in the watcher must not hold up searches.
        kb = open_knowledge(self.ctx)
        try:
            count = len(kb.folders())
            on_change(f"watching {count} folder{'s' if count != 1 else ''}")

            def reported(report: Any) -> None:
                if report.changed:
                    n = len(report.added) + len(report.updated) + len(report.removed)
                    on_change(f"live sync: {n} file{'s' if n != 1 else ''} updated "
                              f"at {time.strftime('%H:%M:%S')}")

            def failed(exc: BaseException) -> None:
                on_change(f"live sync failed: {exc}")

            watcher = FolderWatcher(
                kb, sync_settings(self.ctx.config), debounce_ms=cfg.watch_debounce_ms,
                on_report=reported, on_error=failed,
                ignore_paths=[self.ctx.paths.data_dir, self.ctx.paths.cache_dir],
            )
            watcher.run(stop)
        finally:
            kb.close()

    def close(self) -> None:
        for opened in (self._light, self._writer, self._retriever):
            opened.close()


# Openers import inside: this module is imported before the first frame.

def _open_retriever(ctx: AppContext) -> HybridRetriever:
    from assistant.retrieval.open import open_retriever

    return open_retriever(ctx, origin="tui")


def _close_retriever(retriever: HybridRetriever) -> None:
    from assistant.retrieval.open import close_retriever

    close_retriever(retriever)


def _open_knowledge(ctx: AppContext, with_embedder: bool) -> KnowledgeBase:
    from assistant.knowledge_service import open_knowledge

    return open_knowledge(ctx, with_embedder=with_embedder)


def _close_kb(kb: KnowledgeBase) -> None:
    kb.close()


def _open_memory(ctx: AppContext) -> MemoryStore:
    from assistant.memory.service import open_memory

    return open_memory(ctx)


def _open_sessions(ctx: AppContext) -> SessionStore:
    from assistant.chat.sessions import SessionStore

    return SessionStore.open(ctx.paths.sessions_db)


def _is_recent(path: str, ctx: AppContext) -> bool:
    cfg = ctx.config.retrieval
    if cfg.recency_boost <= 0:
        return False
    try:
        age_days = (time.time() - os.stat(path).st_mtime) / 86400
    except OSError:
        return False
    return age_days < cfg.recency_days


def hit_view(hit: SearchHit, roots: Sequence[str], ctx: AppContext) -> SourceView:
    chunk = hit.chunk
    return SourceView(
        number=hit.rank, chunk_id=chunk.id, source=chunk.source,
        relpath=chunk.relpath if chunk.root else _relpath(chunk.source, roots),
        heading=chunk.heading, text=chunk.text, start_line=chunk.start_line,
        end_line=chunk.end_line, vector=hit.cosine, keyword=hit.keyword, fused_rank=hit.rank,
        recent=hit.recency_boost > 0, more_from_file=hit.more_from_file,
    )


def source_view(source: Source, ctx: AppContext) -> SourceView:
    """A chat engine's numbered source; scores come from the retriever's JSON hit."""
    item: KnowledgeItem = source.item
    data = item.data or {}
    scores = data.get("scores") or {}
    boost = data.get("recency_boost")
    return SourceView(
        number=source.n, chunk_id=item.chunk_id, source=item.source, relpath=item.relpath,
        heading=item.heading, text=item.text, start_line=item.start_line or 1,
        end_line=item.end_line or item.start_line or 1,
        vector=scores.get("vector"), keyword=scores.get("keyword"),
        fused_rank=int(data.get("rank") or source.n),
        recent=bool(boost) if boost is not None else _is_recent(item.source, ctx),
        cited=source.cited, more_from_file=int(data.get("more_from_file") or 0),
    )


def memory_item_view(item: MemoryItem) -> MemoryView:
    data = item.data or {}
    return MemoryView(item.memory_id, item.kind, item.text, data.get("key"),
                      bool(data.get("pinned", False)), "active", str(data.get("updated_at", "")))


# --- memory -------------------------------------------------------------------------------------

def memory_view(memory: Memory) -> MemoryView:
    return MemoryView(memory.id, memory.type.value, memory.text, memory.key, memory.pinned,
                      memory.status.value, _iso(memory.updated_at))


class MemoryAdapter:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self._store = Lazy(lambda: _open_memory(ctx), close=lambda store: store.close())
        self._seen_version = -1

    def store(self) -> MemoryStore:
        return self._store.get()

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

    def delete(self, memory_id: str) -> None:
        self.store().delete(memory_id)

    def pin(self, memory_id: str, pinned: bool) -> MemoryView:
        return memory_view(self.store().pin(memory_id, pinned))

    def undo(self, memory_id: str) -> MemoryView:
        return memory_view(self.store().undo(memory_id))

    def history(self, memory_id: str) -> list[MemoryEvent]:
        return [
            MemoryEvent(str(e.event), e.old_text, e.new_text, str(e.actor), _iso(e.at))
            for e in self.store().history(memory_id)
        ]

    def forget_all(self) -> int:
        from assistant.erasure.actions import forget_all_memories

        return forget_all_memories(self.ctx, self.store())

    def changes_since(self, stamp: str) -> tuple[list[MemoryView], str]:
        """Memories the assistant added or changed after `stamp` (an updated_at value)."""
        from assistant.memory.model import Actor

        store = self.store()
        version = store.change_count()
        if stamp and version == self._seen_version:
            return [], stamp
        self._seen_version = version
        memories = store.list(statuses=None)
        newest = max((m.updated_at for m in memories), default=stamp or "0")
        if not stamp:
            return [], newest
        fresh: list[MemoryView] = []
        for m in memories:
            if m.updated_at > stamp:
                events = store.history(m.id)
                if events and events[-1].actor is Actor.ASSISTANT:
                    fresh.append(memory_view(m))
        return fresh, max(newest, stamp)

    def close(self) -> None:
        self._store.close()


# --- sessions -----------------------------------------------------------------------------------

def turn_view(turn: Turn, ctx: AppContext) -> TurnView:
    from assistant.chat.turn import TRUNCATED_NOTE

    status = " · ".join(p for p in (
        turn.model,
        turn.status if turn.status != "complete" else "",
        turn.error,
        f"⚠ {TRUNCATED_NOTE}" if turn.truncated else "",
    ) if p)
    return TurnView(
        turn.question, turn.answer,
        tuple(source_view(s, ctx) for s in turn.sources),
        tuple(memory_item_view(m) for m in turn.memories),
        status,
        str(turn.log_id) if turn.log_id is not None else None,  # 👍/👎 on resumed answers
    )


class SessionsAdapter:
    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self._store = Lazy(lambda: _open_sessions(ctx), close=lambda store: store.close())

    def store(self) -> SessionStore:
        return self._store.get()

    def list(self) -> list[SessionView]:
        return [SessionView(s.id, s.title, _iso(s.updated_at), s.turn_count)
                for s in self.store().list()]

    def create(self) -> SessionView:
        s = self.store().create(model=self.ctx.config.ollama.model)
        return SessionView(s.id, s.title, _iso(s.updated_at), 0)

    def turns(self, session_id: str) -> list[TurnView]:
        store = self.store()
        session = store.resolve(session_id)
        return [turn_view(t, self.ctx) for t in store.turns(session.id)]

    def rename(self, session_id: str, title: str) -> None:
        if not title.strip():
            raise UserError("a session title cannot be empty")
        self.store().rename(session_id, title.strip())

    def delete(self, session_id: str) -> None:
        from assistant.erasure.actions import delete_session

        delete_session(self.ctx, self.store(), session_id)

    def export_markdown(self, session_id: str, path: Path) -> Path:
        from assistant.chat.export import session_markdown

        store = self.store()
        session = store.resolve(session_id)
        text = session_markdown(session, store.turns(session.id))
        if path.is_dir():
            raise UserError(f"{path} is a folder: give a file name")
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return path

    def close(self) -> None:
        self._store.close()


# --- chat ---------------------------------------------------------------------------------------

class ChatAdapter:
    """The async ChatEngine through the core's blocking wrapper (its own loop thread).

    One engine for the app's lifetime, so its background work (rolling summary, memory
    extraction) survives between turns and `close()` waits for it before the app exits.
    """

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self._lock = threading.Lock()
        self._chat: Any = None

    def chat(self) -> Any:
        from assistant.chat.service import open_blocking_chat

        with self._lock:
            if self._chat is None:
                self._chat = open_blocking_chat(self.ctx, origin="tui")
            return self._chat

    def warm_up(self) -> None:
        self.chat().warm_up()

    def ask(
        self, session_id: str | None, text: str, *, model: str, cancel: threading.Event
    ) -> Iterator[ChatEvent]:
        from assistant.chat import events as core
        from assistant.chat.turn import TRUNCATED_NOTE

        chat = self.chat()
        if session_id is None and chat.engine.session is not None:
            chat.call(lambda engine: engine.new_session())
        started = time.monotonic()
        tokens = 0
        for event in chat.ask(text, session_id=session_id, model=model, cancel=cancel):
            if isinstance(event, core.Retrieved):
                yield Retrieved(
                    tuple(source_view(s, self.ctx) for s in event.sources),
                    tuple(memory_item_view(m) for m in event.memories),
                    event.low_confidence,
                    str(event.log_id) if event.log_id is not None else None,
                    empty_index=event.empty_index,
                    noted=memory_item_view(event.noted) if event.noted else None,
                    warnings=event.warnings,
                )
            elif isinstance(event, core.Token):
                tokens += 1
                yield Token(event.text)
            elif isinstance(event, core.ToolCalled):
                tool = event.tool
                first = tool.result.splitlines()[0][:200] if tool.result else ""
                yield Token(f"\n\n> 🔧 `{tool.name}` {first}\n\n")
            elif isinstance(event, core.Done):
                turn = event.turn
                total_ms = (turn.timings or {}).get("total_ms")
                yield Finished(
                    turn.model or model, tokens,
                    total_ms / 1000 if total_ms else time.monotonic() - started,
                    tuple(s.n for s in turn.sources if s.cited),
                    interrupted=event.interrupted, session_id=turn.session_id,
                    notice=TRUNCATED_NOTE if turn.truncated else "",
                )
            elif isinstance(event, core.Failed):
                yield Failed(event.error.message, event.error.hint or "", event.partial,
                             event.turn.session_id if event.turn is not None else None)

    def feedback(self, log_id: str, rating: int) -> None:
        from assistant.retrieval.log import RetrievalLog

        if not log_id.isdigit():
            raise UserError("this answer has no retrieval log entry")
        with RetrievalLog.open(self.ctx.paths.retrieval_log_db) as log:
            log.rate(int(log_id), rating)

    def extract_pending(self) -> int:
        with self._lock:
            chat = self._chat
        if chat is None:
            return 0  # nothing was asked in this run
        return int(chat.run(chat.engine.extract_pending(timeout=IDLE_EXTRACT_TIMEOUT)))

    def close(self) -> None:
        """Let the engine finish background work (summary, memory extraction), then stop."""
        with self._lock:
            chat, self._chat = self._chat, None
        if chat is not None:
            chat.close()


class CoreBackend:
    """The real backend: what `brain` runs."""

    def __init__(self, ctx: AppContext) -> None:
        self.ctx = ctx
        self.ollama = OllamaAdapter(ctx)
        self.knowledge = KnowledgeAdapter(ctx)
        self.memory = MemoryAdapter(ctx)
        self.sessions = SessionsAdapter(ctx)
        self.chat = ChatAdapter(ctx)

    def close(self) -> None:
        for part in (self.chat, self.knowledge, self.memory, self.sessions):
            with contextlib.suppress(Exception):  # closing must reach every store
                part.close()
