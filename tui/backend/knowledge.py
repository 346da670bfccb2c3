"""Folders, sync, search and watch for the UI, over the knowledge base and the retriever.

Blocking: the UI calls these from worker threads (tui/workers.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.errors import UserError
from assistant.services import Services
from tui.backend.convert import iso, source_view
from tui.views import FolderView, SearchResult, SyncProgress, SyncSummary

if TYPE_CHECKING:
    from assistant.retrieval.hybrid import HybridRetriever
    from indexing.knowledge import KnowledgeBase


class KnowledgeAdapter:
    """Folders, sync, search and watch over the process's one KnowledgeBase (`Services`)."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.ctx = services.ctx

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
        return self.services.retriever()

    def kb(self) -> KnowledgeBase:
        """The index with the embedding model: the retriever's when it is open."""
        return self.services.knowledge()

    def light(self) -> KnowledgeBase:
        """The index without the embedding model, so listing works even if it cannot load."""
        return self.services.light_knowledge()

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

        remove_folder(self.services, path)

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
        from assistant.timeflags import range_from_filters
        from assistant.timerange import local_now

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
        from assistant.knowledge_service import sync_settings
        from indexing.watch import FolderWatcher

        cfg = self.ctx.config.indexing
        kb = self.services.separate_knowledge()
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
