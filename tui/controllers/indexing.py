"""Indexing and search: folders, sync with live progress, watch mode, Ctrl+F search.

A sync runs on a worker thread (it keeps going when the index manager closes) and reports
progress to the loop through `on_loop`; the index manager, while open, is told each step.
Search works without Ollama: retrieval only, shown in the sources pane.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tui.views import FolderView, SearchResult, SyncProgress, SyncSummary
from tui.workers import Failure, Refresh, attempt, on_loop, succeeded

if TYPE_CHECKING:
    from tui.protocols import KnowledgeApi
    from tui.screens.chat import ChatScreen
    from tui.screens.index_manager import IndexManager

PROGRESS_EVERY_SECONDS = 0.1  # at most ~10 progress repaints a second while indexing


class SyncInterrupted(Exception):
    """Raised from the progress callback to stop a sync when the app quits."""


class IndexingController:
    def __init__(self, screen: ChatScreen, *, watch: bool) -> None:
        self.screen = screen
        self.watch_enabled = watch
        self.manager: IndexManager | None = None  # the index manager, while it is open
        self.search_query = ""  # the last Ctrl+F search (source previews highlight it)
        self._syncing = False
        self._stop = threading.Event()  # quitting: stop the sync and the watcher
        self.refresh_folders = Refresh(screen, "folders", self._folders)

    @property
    def api(self) -> KnowledgeApi:
        return self.screen.backend.knowledge

    def stop(self) -> None:
        self._stop.set()

    # --- the index manager --------------------------------------------------------------------

    def open_manager(self) -> None:
        from tui.screens.index_manager import IndexManager

        manager = IndexManager(self)
        self.manager = manager

        def closed(_: None) -> None:
            if self.manager is manager:
                self.manager = None

        self.screen.app.push_screen(manager, closed)

    async def _folders(self) -> None:
        folders = await attempt(self.screen.app, "Listing folders", self.api.folders)
        if folders is not None and self.manager is not None:
            self.manager.show_folders(folders)

    def add_folder(self, path: Path) -> None:
        self.screen.run_worker(self._add(path), group="folders")

    async def _add(self, path: Path) -> None:
        folder: FolderView | None = await attempt(
            self.screen.app, "Adding the folder", lambda: self.api.add_folder(path))
        if folder is not None:
            self.screen.notify(f"Added {folder.path}; indexing it now.")
            self.refresh_folders()
            self.start_sync([folder.path], rebuild=False)

    def remove_folder(self, path: str) -> None:
        self.screen.run_worker(self._remove(path), group="folders")

    async def _remove(self, path: str) -> None:
        if await succeeded(self.screen.app, "Removing the folder",
                           lambda: self.api.remove_folder(path)):
            self.screen.notify(f"Removed {path} from the index.")
            self.refresh_folders()
            self.screen.status.refresh_stats()

    # --- sync -----------------------------------------------------------------------------------

    def start_sync(self, folders: list[str] | None, *, rebuild: bool) -> None:
        if self._syncing:
            self.screen.notify("Indexing is already running.", severity="warning")
            return
        self._syncing = True
        self.screen.run_worker(self._sync(folders, rebuild), group="sync")

    async def _sync(self, folders: list[str] | None, rebuild: bool) -> None:
        label = "Rebuilding the index" if rebuild else (
            f"Indexing {Path(folders[0]).name}" if folders and len(folders) == 1
            else "Syncing all folders"
        )
        self._started(label)
        report = on_loop(self.screen.app, self._advanced)
        last = 0.0

        def progress(p: SyncProgress) -> None:
            nonlocal last
            if self._stop.is_set():
                raise SyncInterrupted  # quitting: the sync is crash-safe, stop it now
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY_SECONDS or p.done >= p.total:
                last = now
                report(p)

        def sync() -> SyncSummary | None:
            try:
                return self.api.sync(folders, rebuild=rebuild, progress=progress)
            except SyncInterrupted:  # quitting: nothing to show
                return None

        try:
            summary = await attempt(self.screen.app, label, sync,
                                    shown=lambda failed: self._finished(None, failed.line))
            if summary is not None:
                self._finished(summary, "")
        finally:
            self._syncing = False

    def _started(self, label: str) -> None:
        self.screen.status_bar.activity = f"{label}…"
        if self.manager is not None:
            self.manager.sync_started(label)

    def _advanced(self, progress: SyncProgress) -> None:
        if not self._syncing:
            # Reports travel through the app's queue; under load the last one can arrive after
            # the sync ended, and would reopen the progress bar over the summary (issue 13).
            return
        self.screen.status_bar.activity = f"indexing {progress.done}/{progress.total}"
        if self.manager is not None:
            self.manager.sync_advanced(progress)

    def _finished(self, summary: SyncSummary | None, error: str) -> None:
        bar = self.screen.status_bar
        if summary is None:
            bar.activity = "sync failed"
            self.screen.notify(f"Indexing failed: {error}", severity="error", timeout=10)
        else:
            bar.activity = (f"synced: +{summary.added} ~{summary.updated} -{summary.removed}"
                            + (f", {len(summary.skipped)} skipped" if summary.skipped else ""))
        if self.manager is not None:
            self.manager.sync_finished(summary, error)
        self.refresh_folders()
        self.screen.status.refresh_stats()

    # --- watch mode ---------------------------------------------------------------------------

    def watch(self) -> None:
        if self.watch_enabled:
            self.screen.run_worker(self._watch(), group="watch", exclusive=True)

    async def _watch(self) -> None:
        changed = on_loop(self.screen.app, self._watched)
        await attempt(self.screen.app, "Watching folders",
                      lambda: self.api.watch(changed, self._stop), shown=self._watch_off)

    def _watch_off(self, failed: Failure) -> None:
        self.screen.status_bar.activity = f"watch off: {failed.message}"

    def _watched(self, text: str) -> None:
        self.screen.status_bar.activity = text
        self.screen.status.refresh_stats()

    # --- search (works without Ollama) ------------------------------------------------------

    def search(self) -> None:
        """Ctrl+F: search for the message box's text; with nothing typed, ask what to search."""
        text = self.screen.chat_input.text.strip()
        if text:
            self.search_for(text)
            return
        from tui.screens.text_prompt import TextPrompt

        def chosen(query: str | None) -> None:
            if query:
                self.search_for(query)

        prompt = TextPrompt("Search your folders and past conversations for (no model needed):",
                            self.search_query)
        self.screen.app.push_screen(prompt, chosen)

    def search_for(self, text: str) -> None:
        screen = self.screen
        self.search_query = text
        screen.sources_pane.show((), f"Searching: {text[:40]}…")
        screen.run_worker(self._search(text), group="search", exclusive=True)

    async def _search(self, text: str) -> None:
        result: SearchResult | None = await attempt(
            self.screen.app, "Search", lambda: self.api.search(text))
        screen = self.screen
        pane = screen.sources_pane
        screen.show_pane("sources")
        if result is None:  # reported; the conversations are still searched
            pane.show((), f"Search: {text[:40]} · files could not be searched")
        else:
            caption = f"Search: {result.query[:40]}" + (
                f" · {result.dates}" if result.dates else "")
            pane.show(result.sources, caption, low=result.low_confidence, log_id=result.log_id)
            screen.status.show_warnings(result.warnings)
        pane.show_conversations(())
        # Focus stays in the message box: Enter sends what is typed there (Ctrl+S moves to the
        # results); a pane takes keys only when the user moves there.
        # Ctrl+F searches the conversations too: they appear under the files (Enter opens).
        found = await attempt(screen.app, "Searching conversations",
                              lambda: screen.backend.sessions.search(text))
        if found is not None and self.search_query == text:
            pane.show_conversations(found.hits, searched=True)
            screen.status_bar.dates = found.time_range
