"""Folders, sync, search and watch for the UI, over the knowledge base and the retriever.

Blocking: the UI calls these from worker threads (tui/workers.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.context import AppContext
from assistant.errors import UserError
from indexing.lazy import Lazy
from tui.backend.convert import iso, source_view
from tui.views import FolderView, SearchResult, SyncProgress, SyncSummary

if TYPE_CHECKING:
    from assistant.retrieval.hybrid import HybridRetriever
    from indexing.knowledge import KnowledgeBase


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
        return self._retrievers_kb() or self._writer.get()

    def light(self) -> KnowledgeBase:
        """The index without the embedding model, so listing works even if it cannot load."""
        return self._retrievers_kb() or self._writer.peek() or self._light.get()

    def _retrievers_kb(self) -> KnowledgeBase | None:
        from indexing.knowledge import KnowledgeBase

        retriever = self._retriever.peek()
        kb = retriever.kb if retriever is not None else None
        return kb if isinstance(kb, KnowledgeBase) else None

    def stats(self) -> tuple[int, int]:
        return self.light().stats()

    def folders(self) -> list[FolderView]:
        return [
            FolderView(f.path, f.files, f.chunks, iso(f.last_sync))
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
        from assistant.chat.service import item_from_hit
        from assistant.retrieval.dated import search_dated
        from assistant.retrieval.filters import NothingInRange
        from assistant.sessions.turn import Source
        from assistant.timerange import local_now, range_from_filters

        # Dates as in the sessions search: `since:2w` / `until:…`, else "last week" in words.
        now = local_now()
        text, explicit = range_from_filters(query, now)
        # Dates alone (`since:2w`) are for the conversations searched next: no file result.
        if explicit is not None and not text:
            return SearchResult(query, dates=f"files: add words to search them "
                                             f"({explicit.describe()})")
        try:
            found = search_dated(self.retriever(), text, now=now, explicit=explicit)
        except NothingInRange:
            assert explicit is not None  # a phrase's empty range falls back to every date
            return SearchResult(query, dates=f"no files modified {explicit.describe()}")
        result = found.result
        sources = tuple(source_view(Source(h.rank, item_from_hit(h)), self.ctx)
                        for h in result.hits)
        log_id = str(result.log_id) if result.log_id is not None else None
        return SearchResult(query, sources, result.low_confidence, log_id,
                            warnings=result.warnings, dates=found.describe())

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
