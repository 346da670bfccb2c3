"""`python -m bench.scale_tui HOME real|standin [FOLDER]`: the TUI's RSS on a big home (issue 25).

Run by bench/scale.py in a fresh child, so the RSS is the app's own. The real app (`BrainApp`
over the real `CoreBackend`) runs headless: once the index is loaded (the status controller's
"loaded" moment, the chat stores warmed) its RSS is read ("open"); then FOLDER, if given, is
added and every registered folder synced as the TUI's own sync runs it (the `s` key), and
the RSS is read again right after the sync ends ("after sync") and once the sync's memory
could have been handed back (`idle_release.trim_heap`, which the idle release runs too), and,
with a model that can be unloaded, once the idle release freed it ("after release";
`BENCH_IDLE_UNLOAD_SECONDS` replaces `embedding.idle_unload_seconds` so the wait is short).
Prints one JSON line. With "standin" only the embedding model's arithmetic is replaced
(bench/scale_standin.py), so the model's own weights are not in these numbers.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str]) -> int:
    home, mode = argv[0], argv[1]
    folder = Path(argv[2]) if len(argv) > 2 else None
    if mode == "standin":
        from bench.scale_standin import install

        install()
    from assistant.context import AppContext
    from indexing.idle_release import trim_heap
    from tui.app import BrainApp
    from tui.backend import CoreBackend
    from tui.controllers.indexing import IndexingController
    from tui.controllers.status import StatusController
    from tui.views import SyncSummary

    out: dict[str, Any] = {}
    finished: asyncio.Future[tuple[SyncSummary | None, str]] | None = None
    done = IndexingController._finished

    def _finished(self: IndexingController, summary: SyncSummary | None, error: str) -> None:
        done(self, summary, error)
        if finished is not None and not finished.done():
            finished.set_result((summary, error))

    IndexingController._finished = _finished  # type: ignore[method-assign]
    loaded = StatusController._loaded

    def _loaded(self: StatusController, error: str) -> None:
        loaded(self, error)
        if error:
            out["error"] = error
            _report(out)
        self.screen.run_worker(_measure(self.screen.app), group="bench")

    StatusController._loaded = _loaded  # type: ignore[method-assign]

    async def _measure(app: Any) -> None:
        nonlocal finished
        warm = [w for w in app.workers if w.group == "warm-up"]
        await app.workers.wait_for_complete(warm)
        out["open_rss_mb"] = _status_mb("VmRSS")
        if folder is not None:
            await asyncio.to_thread(app.backend.knowledge.add_folder, folder)
        finished = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        app.chat_screen.indexing.start_sync(None, rebuild=False)
        summary, error = await finished
        out["sync_seconds"] = time.perf_counter() - started
        out["sync"] = ({"added": summary.added, "updated": summary.updated,
                        "unchanged": summary.unchanged} if summary is not None else error)
        out["after_sync_rss_mb"] = _status_mb("VmRSS")
        trim_heap()
        out["after_trim_rss_mb"] = _status_mb("VmRSS")
        out["peak_rss_mb"] = _status_mb("VmHWM")
        idle = getattr(ctx.embedder(), "idle", None)
        if idle is not None and idle.enabled:
            # Wait for the release itself (its counter), never for a guessed time.
            released = idle.releases
            deadline = time.monotonic() + 3 * ctx.config.embedding.idle_unload_seconds + 60
            while idle.releases == released and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            if idle.releases > released:
                out["after_release_rss_mb"] = _status_mb("VmRSS")
        _report(out)

    ctx = AppContext.load(home)
    if os.environ.get("BENCH_IDLE_UNLOAD_SECONDS"):
        ctx.config.embedding.idle_unload_seconds = float(os.environ["BENCH_IDLE_UNLOAD_SECONDS"])
    BrainApp(ctx, CoreBackend(ctx), watch=False).run(headless=True, size=(120, 40))
    return 1  # _report exits: reaching here means the app ended before the measurement


def _report(out: dict[str, Any]) -> None:
    print(json.dumps(out), flush=True)
    os._exit(0)  # no teardown: the numbers are taken; waiting for threads would only cost time


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
