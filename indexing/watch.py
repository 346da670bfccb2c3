"""Live sync: watch the registered folders and re-sync the ones that changed, debounced.

`FolderWatcher.run(stop_event)` blocks, so the CLI runs it in the foreground and the TUI in a
worker thread; each sync's `SyncReport` goes to `on_report`, failures to `on_error` (a failed
sync never stops the watcher). Changes are collected until the folders have been quiet for
`debounce_ms`, then each affected folder is synced once — a `git checkout` of 500 files is one
sync, not 500. The set of registered folders is re-read about once a second, so folders added or
removed elsewhere (the TUI, another `brain index`) are picked up without a restart.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from indexing.errors import log_failure
from indexing.lock import IndexBusy
from indexing.sync import SyncReport, SyncSettings

if TYPE_CHECKING:
    from indexing.knowledge import KnowledgeBase

log = logging.getLogger(__name__)

# How long a burst of changes may keep postponing a sync before it runs anyway.
MAX_DELAY_FACTOR = 5
FOLDER_RECHECK_MS = 1000
BUSY_RETRY_SECONDS = 2.0


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class FolderWatcher:
    def __init__(
        self,
        kb: KnowledgeBase,
        settings: SyncSettings,
        *,
        debounce_ms: int = 1500,
        on_report: Callable[[SyncReport], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        ignore_paths: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.kb = kb
        self.settings = settings
        self.debounce_ms = max(1, int(debounce_ms))
        self.on_report = on_report
        self.on_error = on_error
        # The app's own data (SQLite, Chroma, cache) may live inside a watched folder: its
        # writes during a sync must not trigger the next sync.
        self.ignore_paths = tuple(os.path.realpath(p) for p in ignore_paths)
        self.syncs = 0

    def _registered(self) -> list[str]:
        return [f.path for f in self.kb.folders() if Path(f.path).is_dir()]

    def _filter(self) -> Callable[..., bool]:
        from watchfiles import Change, DefaultFilter

        base = DefaultFilter()
        ignored = self.ignore_paths

        def accept(change: Change, path: str) -> bool:
            if any(_inside(path, p) for p in ignored):
                return False
            return bool(base(change, path))

        return accept

    def run(self, stop_event: threading.Event) -> None:
        """Watch until `stop_event` is set."""
        from watchfiles import watch

        pending: set[str] = set()
        while not stop_event.is_set():
            folders = self._registered()
            if not folders:
                stop_event.wait(FOLDER_RECHECK_MS / 1000)
                continue
            # Changes made before the OS watch was in place (start-up, a folder just added)
            # raise no event: the first pass after it is live syncs every folder once.
            catch_up = True
            for changes in watch(
                *folders,
                watch_filter=self._filter(),
                step=self.debounce_ms,  # quiet time after the last change before yielding
                debounce=self.debounce_ms * MAX_DELAY_FACTOR,
                stop_event=stop_event,
                rust_timeout=FOLDER_RECHECK_MS,
                yield_on_timeout=True,
                raise_interrupt=True,  # Ctrl+C in `brain index --watch` must stop it
            ):
                if catch_up:
                    pending.update(folders)
                    catch_up = False
                for _change, path in changes:
                    pending.update(f for f in folders if _inside(path, f))
                if pending:
                    pending = self._sync(sorted(pending), stop_event)
                if stop_event.is_set() or self._registered() != folders:
                    break  # restart the watch with the new folder list

    def _sync(self, folders: Sequence[str], stop_event: threading.Event) -> set[str]:
        """Sync `folders`; returns the ones still pending (index busy elsewhere)."""
        try:
            report = self.kb.sync(self.settings, folders=list(folders))
        except IndexBusy:
            stop_event.wait(BUSY_RETRY_SECONDS)
            return set(folders)
        except Exception as exc:  # keep watching: the next change may well succeed
            log_failure(log, "live sync failed", exc)  # on_error shows the message only
            if self.on_error:
                self.on_error(exc)
            return set()
        self.syncs += 1
        if self.on_report:
            self.on_report(report)
        return set()
