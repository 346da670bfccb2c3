"""What every benchmark shares: locating the shared data, timing, result files.

A result is one metric with its baseline measured in the same run (absolute times on a shared
2-core machine are noisy; ratios are not). Results go to bench/results/<bench>.json together with
the machine and git commit, and the README's performance table is regenerated from those files.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "bench" / "results"
DATA_DIR = ROOT / "bench" / "data"
SHARED_ENV = "BRAIN_SHARED"  # where ../shared lives, if elsewhere


class MissingData(Exception):
    """The shared corpus or dataset a benchmark needs is not on this machine."""


def shared_dir() -> Path:
    return Path(os.environ.get(SHARED_ENV) or ROOT.parent / "shared").resolve()


def tldr_dir() -> Path:
    path = shared_dir() / "corpora" / "tldr"
    if not (path / "pages").is_dir():
        raise MissingData(
            f"tldr corpus not found at {path}; set {SHARED_ENV} to the folder holding corpora/"
        )
    return path


def locomo_file() -> Path:
    path = shared_dir() / "datasets" / "locomo" / "locomo10.json"
    if not path.is_file():
        raise MissingData(
            f"LoCoMo not found at {path}; set {SHARED_ENV} to the folder holding datasets/"
        )
    return path


@dataclass
class Result:
    metric: str  # e.g. "cold_index_seconds"
    value: float
    unit: str = ""  # "s", "ms", "ratio", "", "MB"…
    baseline: float | None = None  # the same metric for the baseline, same run
    baseline_name: str | None = None
    target: str | None = None  # the target, for the README, e.g. "<= 1.2x raw encode"
    passed: bool | None = None  # whether the target is met
    notes: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline  # type: ignore[operator]


@dataclass
class Report:
    bench: str
    quick: bool
    results: list[Result] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, metric: str, value: float, **kwargs: Any) -> Result:
        result = Result(metric, value, **kwargs)
        self.results.append(result)
        print(f"  {metric}: {value:.4g}{result.unit and ' ' + result.unit}"
              + (f"  (baseline {result.baseline_name}: {result.baseline:.4g}, "
                 f"ratio {result.ratio:.3g})" if result.ratio is not None else "")
              + (f"  target {result.target}: {'met' if result.passed else 'NOT met'}"
                 if result.target and result.passed is not None else ""), flush=True)
        return result

    def write(self) -> Path:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        path = RESULTS_DIR / f"{self.bench}{'-quick' if self.quick else ''}.json"
        payload = {
            "bench": self.bench,
            "quick": self.quick,
            "machine": machine_info(),
            "git_commit": git_commit(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "results": [asdict(r) | {"ratio": r.ratio} for r in self.results],
            "details": self.details,
        }
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return path


def machine_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def peak_rss_mb() -> float:
    """Peak resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if platform.system() == "Darwin" else peak / 1024


@contextmanager
def timer() -> Iterator[dict[str, float]]:
    box: dict[str, float] = {}
    start = time.perf_counter()
    try:
        yield box
    finally:
        box["seconds"] = time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]
