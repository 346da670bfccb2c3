"""TUI benchmark: time to first paint of `brain` vs a bare Textual app, and peak memory.

Each measurement is a fresh Python process (imports are most of the cost), started by this
module as `python -m bench.tui --probe KIND`. The probe runs the app headless and, right after
the first frame is painted, prints the seconds since the parent started the process, the peak
RSS, and which heavy modules were already imported (none may be: torch, LlamaIndex and Chroma
load in a worker after the first paint). Baseline: a Textual hello-world in the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.common import ROOT, Report, peak_rss_mb

HEAVY = ("torch", "transformers", "llama_index", "chromadb", "jieba", "sentence_transformers")
TARGET_SECONDS = 1.0


def _probe(kind: str) -> None:
    """In the child: start the app, report right after the first paint, exit at once."""
    started = float(os.environ["BENCH_T0"])
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    def report(extra: dict[str, Any] | None = None) -> None:
        payload = {
            "seconds": time.time() - started,
            "peak_rss_mb": peak_rss_mb(),
            "cpu_seconds": sum(os.times()[:2]),  # all threads: what a busy machine must find
            "heavy_loaded": sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY)),
        }
        payload.update(extra or {})
        print("BENCH " + json.dumps(payload), flush=True)
        os._exit(0)  # skip interpreter teardown (and waiting for background loads)

    if kind == "hello":
        class Hello(App[None]):
            def compose(self) -> ComposeResult:
                yield Static("Hello, world")

            def on_mount(self) -> None:
                self.call_after_refresh(report)

        Hello().run(headless=True, size=(120, 40))
        return

    from assistant.context import AppContext
    from tui.app import BrainApp
    from tui.backend import CoreBackend
    from tui.controllers.status import StatusController

    ctx = AppContext.load(None)
    wait_for_model = kind == "brain-loaded"
    if wait_for_model:
        loaded = StatusController._loaded

        def _loaded(self: StatusController, error: str) -> None:  # the "model ready" moment
            loaded(self, error)
            report({"error": error, "stages": getattr(self, "stages", None)})

        StatusController._loaded = _loaded  # type: ignore[method-assign]

    class Probe(BrainApp):
        def on_mount(self) -> None:
            super().on_mount()
            if not wait_for_model:
                self.call_after_refresh(report)

    Probe(ctx, CoreBackend(ctx), watch=False).run(headless=True, size=(120, 40))


def _measure(kind: str, home: str) -> dict[str, Any]:
    env = dict(os.environ, BRAIN_HOME=home, BENCH_T0=repr(time.time()))
    # As an installed app starts: from cached bytecode (pip compiles it at install). Without
    # this, a PYTHONDONTWRITEBYTECODE environment recompiles every project module on every
    # start while Textual's own bytecode is cached, which inflates brain vs the baseline.
    # The cache lives in the bench's temporary home, never in the source tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(home, "pycache")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    out = subprocess.run(
        [sys.executable, "-m", "bench.tui", "--probe", kind],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    for line in out.stdout.splitlines():
        if line.startswith("BENCH "):
            return dict(json.loads(line[6:]))
    raise RuntimeError(f"probe {kind} failed (exit {out.returncode}): {out.stderr[-2000:]}")


def run(quick: bool) -> Report:
    report = Report("tui", quick)
    rounds = 3 if quick else 7
    with tempfile.TemporaryDirectory(prefix="brain-bench-tui-") as home:
        # First runs write the default config, create the stores and the bytecode cache.
        _measure("hello", home)
        _measure("brain", home)
        brain: list[dict[str, Any]] = []
        hello: list[dict[str, Any]] = []
        for _ in range(rounds):  # interleaved, so machine load hits both alike
            hello.append(_measure("hello", home))
            brain.append(_measure("brain", home))
        loaded = None
        if not quick:  # the first run compiles torch & co. into the bytecode cache: discard it
            _measure("brain-loaded", home)
            loaded = _measure("brain-loaded", home)
    brain_s = statistics.median(r["seconds"] for r in brain)
    hello_s = statistics.median(r["seconds"] for r in hello)
    heavy = sorted({m for r in brain for m in r["heavy_loaded"]})
    report.add("first_paint_seconds", brain_s, unit="s", baseline=hello_s,
               baseline_name="bare Textual hello-world", target=f"<= {TARGET_SECONDS} s",
               passed=brain_s <= TARGET_SECONDS and not heavy,
               notes=f"median of {rounds} fresh processes, bytecode cached; heavy modules at "
                     f"first paint: {', '.join(heavy) or 'none'}")
    report.add("first_paint_peak_rss_mb", statistics.median(r["peak_rss_mb"] for r in brain),
               unit="MB", baseline=statistics.median(r["peak_rss_mb"] for r in hello),
               baseline_name="bare Textual hello-world")
    if loaded is not None:
        report.add("model_loaded_seconds", loaded["seconds"], unit="s",
                   notes="start → embedding model and index ready (background worker, bytecode "
                         "cached); "
                         + (f"error: {loaded['error']}" if loaded.get("error") else "ok"))
        report.add("model_loaded_peak_rss_mb", loaded["peak_rss_mb"], unit="MB")
    report.details = {"brain_runs": brain, "hello_runs": hello, "loaded_run": loaded}
    return report


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        _probe(sys.argv[2])
    else:
        run(quick="--quick" in sys.argv).write()
