"""`brain index`: register folders and keep the knowledge index in sync with them."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from assistant.cli.common import nonempty, plural, print_json, services
from assistant.cli.common import rate as rate_text
from assistant.cli.plain_output import terminal
from assistant.errors import UserError
from assistant.knowledge_service import sync_settings

if TYPE_CHECKING:
    from indexing.knowledge import KnowledgeBase
    from indexing.progress import SyncProgress
    from indexing.sync import SyncReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index",
        help="index folders of notes, docs and code (and keep them in sync)",
        description="Register folders and index them: new files are added, changed files "
        "re-indexed, deleted or now-ignored files removed. Embeddings are cached, so "
        "re-indexing unchanged text never runs the model again.",
    )
    p.add_argument("paths", nargs="*", type=nonempty, metavar="PATH",
                   help="folders to register and index")
    p.add_argument("--sync", action="store_true", help="re-sync every registered folder")
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="drop the index and rebuild it from the files (embeddings come from the cache)",
    )
    p.add_argument(
        "--watch", action="store_true", help="after syncing, keep watching folders for changes"
    )
    p.add_argument(
        "--verbose", "-v", action="store_true", help="list added, updated, removed, skipped files"
    )
    p.add_argument("--json", action="store_true", help="print the sync report as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not (args.paths or args.sync or args.rebuild or args.watch):
        raise UserError(
            "nothing to index: give one or more folders",
            hint="`brain index ~/notes` registers and indexes a folder; "
            "`brain index --sync` re-syncs all registered folders",
        )
    from indexing.knowledge_types import resolve_folder

    # Validate every path before registering any: a typo must not leave half the work done.
    folders = [resolve_folder(p) for p in args.paths]
    core = services(args)
    ctx = core.ctx
    out = sys.stdout
    if not args.json and out.isatty():
        print("Loading the embedding model…", file=sys.stderr, flush=True)
    kb = core.knowledge()
    try:
        targets = _register(kb, folders, quiet=args.json)
        if not kb.folders():
            raise UserError(
                "no folders registered yet", hint="add one with `brain index PATH`"
            )
        if kb.reembed_needed and not args.json:
            print(
                f"The embedding model changed ({kb.indexed_model} → "
                f"{ctx.config.embedding.model}): re-embedding the index into a fresh "
                "collection.",
                flush=True,
            )
        settings = sync_settings(ctx.config)
        sync_all = args.sync or args.rebuild or (args.watch and not targets)
        reporter = _Progress(terminal(out)) if not args.json else None  # rich draws the bar
        try:
            report = kb.sync(
                settings,
                folders=None if sync_all else targets,
                rebuild=args.rebuild,
                progress=reporter,
            )
        finally:
            if reporter:
                reporter.close()
        if args.json:
            print_json(report_json(report, kb))
        else:
            _print_report(report, kb, verbose=args.verbose, out=out)
        if args.watch:
            return _watch(kb, settings, ctx, out=out, as_json=args.json, first=report)
    finally:
        core.close()
    return 0


def _register(kb: KnowledgeBase, folders: list[Any], *, quiet: bool) -> list[str]:
    targets: list[str] = []
    for folder in folders:
        added = kb.add_folder(folder)
        if added.status == "inside":
            assert added.parent is not None
            if not quiet:
                print(f"{added.path} is already indexed as part of {added.parent}")
            target = added.parent
        else:
            if not quiet and added.status == "already":
                print(f"{added.path} is already registered; syncing it")
            for child in added.absorbed:
                if not quiet:
                    print(f"{child} stays registered until {added.path} has synced once")
            target = added.path
        if target not in targets:
            targets.append(target)
    return targets


def report_json(report: SyncReport, kb: KnowledgeBase) -> dict[str, Any]:
    files, chunks = kb.stats()
    return {
        "folders": list(report.folders),
        "added": list(report.added),
        "updated": list(report.updated),
        "removed": list(report.removed),
        "unchanged": report.unchanged,
        "skipped": {
            reason: [{"path": p, "detail": d} for p, d in items]
            for reason, items in report.skipped.items()
        },
        "chunks_added": report.chunks_added,
        "chunks_removed": report.chunks_removed,
        "embedded": report.embedded,
        "cache_hits": report.cache_hits,
        "reused": report.reused,
        "absorbed": [{"folder": c, "into": p} for c, p in report.absorbed],
        "repaired": report.repaired,
        "reembedded": report.reembedded,
        "rebuilt": report.rebuilt,
        "missing_folders": list(report.missing_folders),
        "seconds": round(report.seconds, 3),
        "total_files": files,
        "total_chunks": chunks,
    }


def _print_report(report: SyncReport, kb: KnowledgeBase, *, verbose: bool, out: TextIO) -> None:
    files, chunks = kb.stats()
    what = "Rebuilt" if report.rebuilt else "Synced"
    n = len(report.folders)
    print(f"{what} {n} folder{'s' if n != 1 else ''}: {report.summary()}", file=out)
    print(f"Index: {files} files, {chunks} chunks.", file=out)
    for child, parent in report.absorbed:
        print(f"{child} is now covered by {parent}", file=out)
    for folder in report.missing_folders:
        print(
            f"warning: {folder} is missing; its chunks are kept "
            f"(remove it with `brain folders rm {folder}`)",
            file=out,
        )
    if verbose:
        for title, paths in (
            ("added", report.added),
            ("updated", report.updated),
            ("removed", report.removed),
        ):
            for path in paths:
                print(f"  {title}: {path}", file=out)
        for reason, items in report.skipped.items():
            print(f"Skipped ({reason}): {len(items)}", file=out)
            for path, detail in items:
                print(f"  {path}  ({detail})", file=out)
    elif report.skipped:
        print("Run with --verbose to list the skipped files.", file=out)
    out.flush()


class _Progress:
    """A rich progress bar on a terminal; a few plain lines otherwise (logs, pipes, CI)."""

    PLAIN_EVERY = 5.0  # seconds between plain progress lines

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self.last_plain = 0.0
        self._bar: Any = None
        self._task: Any = None
        self._repair: Any = None

    def __call__(self, event: SyncProgress) -> None:
        from indexing.progress import Phase

        if self.tty:
            self._rich(event)
            return
        now = time.monotonic()
        final = event.phase == Phase.done
        if event.phase == Phase.embedding and event.chunks_total and (
            now - self.last_plain >= self.PLAIN_EVERY
        ):
            self.last_plain = now
            print(f"embedding: {event.chunks_done}/{event.chunks_total} chunks "
                  f"({event.files_done}/{event.files_total} files read)",
                  file=self.out, flush=True)
        elif event.phase in (Phase.indexing, Phase.done) and event.files_total and (
            final or now - self.last_plain >= self.PLAIN_EVERY
        ):
            self.last_plain = now
            elapsed = now - self.started
            speed = event.files_done / elapsed if elapsed > 0 else 0.0
            eta = f"{(event.files_total - event.files_done) / speed:.0f}s" if speed > 0 else "?"
            print(
                f"indexing: {event.files_done}/{plural(event.files_total, 'file')}, "
                f"{plural(event.chunks_done, 'chunk')}, {rate_text(speed, 'files')}, ETA {eta}",
                file=self.out,
                flush=True,
            )
        elif event.phase == Phase.repairing and event.chunks_total and (
            now - self.last_plain >= self.PLAIN_EVERY or event.chunks_done == event.chunks_total
        ):
            self.last_plain = now
            print(
                f"re-embedding: {event.chunks_done}/{event.chunks_total} chunks",
                file=self.out,
                flush=True,
            )

    def _rich(self, event: SyncProgress) -> None:
        from indexing.progress import Phase

        if self._bar is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[chunks]}"),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.out),
                transient=False,
            )
            self._bar.start()
        if event.phase == Phase.repairing and event.chunks_total:
            if self._repair is None:
                self._repair = self._bar.add_task(
                    "re-embedding", total=event.chunks_total, chunks="", rate=""
                )
            self._bar.update(self._repair, completed=event.chunks_done)
            return
        if event.phase in (Phase.indexing, Phase.embedding, Phase.done):
            if self._task is None:
                self._task = self._bar.add_task(
                    "indexing", total=event.files_total, chunks="", rate=""
                )
            elapsed = time.monotonic() - self.started
            rate = rate_text(event.files_done / elapsed, "files") if elapsed > 0 else ""
            if event.phase == Phase.embedding:
                chunks = f"embedding {event.chunks_done}/{event.chunks_total} chunks"
                description = "embedding"
            else:
                chunks = plural(event.chunks_done, "chunk")
                description = "indexing" if event.phase == Phase.indexing else "done"
            # The same file count as the summary: a sync with nothing to read shows 0/0.
            self._bar.update(
                self._task,
                total=event.files_total,
                completed=event.files_done,
                chunks=chunks,
                rate=rate,
                description=description,
            )
        elif event.phase == Phase.scanning and self._task is None:
            self._bar.console.print(f"scanning {event.path}", highlight=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _watch(kb: KnowledgeBase, settings: Any, ctx: Any, *, out: TextIO, as_json: bool,
           first: SyncReport | None = None) -> int:
    from indexing.watch import FolderWatcher

    # The summary of the sync that started the watch was printed already; the watcher's own
    # first pass (run as soon as the OS watch is live) finds the same skipped files: only new
    # changes and newly skipped files are worth a line.
    reported_skips = {path for items in (first.skipped if first else {}).values()
                      for path, _ in items}

    def on_report(report: SyncReport) -> None:
        skips = {path for items in report.skipped.values() for path, _ in items}
        new_skips = skips - reported_skips
        reported_skips.update(skips)
        if not (report.changed or new_skips):
            return
        if as_json:
            print_json(report_json(report, kb))
        else:
            stamp = time.strftime("%H:%M:%S")
            print(f"[{stamp}] {report.summary()}", file=out, flush=True)

    def on_error(exc: BaseException) -> None:
        print(f"brain: sync failed: {exc}", file=sys.stderr, flush=True)

    stop = threading.Event()
    watcher = FolderWatcher(
        kb,
        settings,
        debounce_ms=ctx.config.indexing.watch_debounce_ms,
        on_report=on_report,
        on_error=on_error,
        ignore_paths=(ctx.paths.data_dir, ctx.paths.cache_dir, ctx.paths.config_dir),
    )
    if not as_json:
        print("Watching for changes (Ctrl+C to stop)…", file=out, flush=True)
    try:
        watcher.run(stop)
    except KeyboardInterrupt:
        stop.set()
    return 0
