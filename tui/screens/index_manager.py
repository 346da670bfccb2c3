"""Indexed folders: add (with a folder picker), remove, re-sync, rebuild; live progress.

The sync itself runs in the indexing controller (it keeps going when this screen closes); the
screen asks the controller, handed to it, to start one and shows the progress it forwards.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, ProgressBar, Static

from assistant.plain_text import plain
from tui.plain import plain_text
from tui.screens.confirm import ConfirmScreen
from tui.screens.path_picker import PathPicker
from tui.views import FolderView, SyncProgress, SyncSummary
from tui.wording import plural

if TYPE_CHECKING:
    from tui.controllers.indexing import IndexingController

SKIPPED_SHOWN = 200


def format_rate(done: int, total: int, elapsed: float) -> str:
    if elapsed <= 0 or done <= 0:
        return f"{done}/{plural(total, 'file')}"
    rate = done / elapsed
    eta = (total - done) / rate if rate > 0 else 0.0
    speed = f"{rate:.1f} files/s" if rate >= 1 else f"{1 / rate:.1f} s/file"  # never "0.0/s"
    return f"{done}/{plural(total, 'file')} · {speed} · ETA {eta:.0f} s"


class IndexManager(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", priority=True),  # (type-ahead: chat.py)
        Binding("q", "dismiss", "Close", show=False),
        Binding("a", "add", "Add folder"),
        Binding("d,delete", "remove", "Remove"),
        Binding("s", "sync", "Re-sync"),
        Binding("R", "rebuild", "Rebuild"),
    ]

    def __init__(self, indexing: IndexingController) -> None:
        super().__init__()
        self.indexing = indexing
        self.folders: list[FolderView] = []
        self._started = 0.0

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="index-manager"):
            yield Static("Indexed folders", classes="dialog-title", markup=False)
            table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True,
                                              id="folders")
            table.add_columns("folder", "files", "chunks", "last sync")
            yield table
            yield Static("", id="sync-label", markup=False)
            yield ProgressBar(total=None, show_eta=False, id="sync-progress")
            yield Static("", id="sync-summary", markup=False)
            skipped: DataTable[str] = DataTable(cursor_type="row", id="skipped")
            skipped.add_columns("skipped file", "reason")
            yield skipped
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sync-progress").display = False
        self.query_one("#skipped").display = False
        self.indexing.refresh_folders()

    # --- fed by the app ---------------------------------------------------------------------

    def show_folders(self, folders: list[FolderView]) -> None:
        self.folders = folders
        table = self.query_one("#folders", DataTable)
        table.clear()
        for f in folders:
            table.add_row(plain_text(f.path), f"{f.files:,}", f"{f.chunks:,}",
                          f.last_sync or "never", key=f.path)
        if not folders:
            self.query_one("#sync-summary", Static).update(
                "No folders yet: press a to add one."
            )

    def sync_started(self, label: str) -> None:
        self._started = time.monotonic()
        bar = self.query_one("#sync-progress", ProgressBar)
        bar.display = True
        bar.update(total=None, progress=0)
        self.query_one("#sync-label", Static).update(plain(label))
        self.query_one("#sync-summary", Static).update("")

    def sync_advanced(self, progress: SyncProgress) -> None:
        if not self._started:
            self.sync_started("Syncing…")
        bar = self.query_one("#sync-progress", ProgressBar)
        bar.display = True
        bar.update(total=max(progress.total, 1), progress=progress.done)
        text = format_rate(progress.done, progress.total, time.monotonic() - self._started)
        if progress.current:
            text += f" · {Path(progress.current).name}"
        self.query_one("#sync-label", Static).update(plain(f"{progress.phase}: {text}"))

    def sync_finished(self, summary: SyncSummary | None, error: str) -> None:
        self._started = 0.0
        self.query_one("#sync-progress").display = False
        self.query_one("#sync-label", Static).update("")
        out = self.query_one("#sync-summary", Static)
        if summary is None:
            out.update(plain(f"Sync failed: {error}"))
            return
        out.update(
            f"Done in {summary.seconds:.1f} s: {summary.added} added, {summary.updated} updated, "
            f"{summary.removed} removed, {summary.unchanged} unchanged, "
            f"{len(summary.skipped)} skipped"
        )
        skipped = self.query_one("#skipped", DataTable)
        skipped.clear()
        for path, reason in summary.skipped[:SKIPPED_SHOWN]:
            skipped.add_row(plain_text(path), plain_text(reason))
        if len(summary.skipped) > SKIPPED_SHOWN:
            skipped.add_row(f"… and {len(summary.skipped) - SKIPPED_SHOWN} more", "")
        skipped.display = bool(summary.skipped)

    # --- actions --------------------------------------------------------------------------------

    def _selected(self) -> FolderView | None:
        table = self.query_one("#folders", DataTable)
        if not self.folders or table.cursor_row >= len(self.folders):
            return None
        return self.folders[table.cursor_row]

    def action_add(self) -> None:
        def done(path: Path | None) -> None:
            if path is not None:
                self.indexing.add_folder(path)

        self.app.push_screen(PathPicker(Path.home()), done)

    def action_remove(self) -> None:
        folder = self._selected()
        if folder is None:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.indexing.remove_folder(folder.path)

        self.app.push_screen(
            ConfirmScreen(f"Stop indexing {folder.path}?\nIts chunks are removed from the "
                          "index; your files are not touched.", yes="Remove", danger=True),
            done,
        )

    def action_sync(self) -> None:
        folder = self._selected()
        self.indexing.start_sync([folder.path] if folder else None, rebuild=False)

    def action_rebuild(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self.indexing.start_sync(None, rebuild=True)

        self.app.push_screen(
            ConfirmScreen("Rebuild the whole index from scratch? This re-reads every file.",
                          yes="Rebuild"),
            done,
        )
