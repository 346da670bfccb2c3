"""`python -m bench` (what `make bench` runs): every benchmark runs, results land in
bench/results/*.json with their baselines, and README's table is regenerated between markers."""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import types
from pathlib import Path

import pytest

import bench.__main__ as bench_main
import bench.common as common
from bench.common import MissingData, Report
from bench.readme_table import END, START, render_table, update_readme

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str, run: object) -> types.ModuleType:
    module = types.ModuleType(name)
    module.run = run  # type: ignore[attr-defined]
    return module


@pytest.fixture
def results_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "results"
    monkeypatch.setattr(common, "RESULTS_DIR", out)
    monkeypatch.setattr("bench.readme_table.RESULTS_DIR", out)
    return out


@pytest.fixture
def readme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "README.md"
    path.write_text(f"# Title\n\nintro\n\n{START}\nold table\n{END}\n\n## After\nkept\n")
    monkeypatch.setattr("bench.readme_table.ROOT", tmp_path)
    return path


def _fake_benchmarks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    seen_quick: list[bool] = []

    def ok(quick: bool) -> Report:
        seen_quick.append(quick)
        report = Report("okbench", quick)
        report.add("index_seconds", 2.0, unit="s", baseline=4.0, baseline_name="naive",
                   target="<= 1x naive", passed=True)
        report.add("recall_at_5", 0.8, baseline=0.9, baseline_name="dense-only",
                   target=">= dense-only", passed=False)
        return report

    def missing(quick: bool) -> Report:
        raise MissingData("corpus not found at /nowhere")

    def broken(quick: bool) -> Report:
        raise RuntimeError("benchmark bug")

    for name, run in (("okbench", ok), ("missingbench", missing), ("brokenbench", broken)):
        monkeypatch.setitem(sys.modules, f"fakebench_{name}", _module(f"fakebench_{name}", run))
    monkeypatch.setattr(bench_main, "BENCHMARKS", {
        "okbench": "fakebench_okbench",
        "missingbench": "fakebench_missingbench",
        "brokenbench": "fakebench_brokenbench",
    })
    return seen_quick


def test_runs_every_benchmark_writes_results_and_regenerates_the_table(
    results_dir: Path, readme: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("QUICK", raising=False)
    seen_quick = _fake_benchmarks(monkeypatch)
    code = bench_main.main(["--quick", "--in-process"])
    out = capsys.readouterr().out
    assert code == 1, "a crashing benchmark must fail the run"
    assert seen_quick == [True]
    assert "skipped: corpus not found at /nowhere" in out
    assert "FAILED: brokenbench" in out

    data = json.loads((results_dir / "okbench-quick.json").read_text())
    assert data["quick"] is True and data["bench"] == "okbench"
    assert {"python", "platform", "cpus"} <= set(data["machine"])
    assert "git_commit" in data and data["time"].endswith("Z")
    first = data["results"][0]
    assert first["metric"] == "index_seconds" and first["baseline"] == 4.0
    assert first["ratio"] == pytest.approx(0.5)
    assert sorted(p.name for p in results_dir.iterdir()) == ["okbench-quick.json"]

    text = readme.read_text()
    assert "old table" not in text
    assert text.startswith("# Title\n\nintro\n\n" + START)
    assert text.endswith(END + "\n\n## After\nkept\n")
    rows = text.splitlines()
    assert ("| okbench (quick) | index_seconds | 2 s | 4 s (naive) | 0.5 | <= 1x naive"
            " | yes |") in rows
    assert ("| okbench (quick) | recall_at_5 | 0.8 | 0.9 (dense-only) | 0.889 | >= dense-only"
            " | **no** |") in rows


def test_quick_comes_from_the_environment_too(
    results_dir: Path, readme: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_quick = _fake_benchmarks(monkeypatch)
    monkeypatch.setenv("QUICK", "1")
    assert bench_main.main(["okbench"]) == 0
    monkeypatch.setenv("QUICK", "0")
    assert bench_main.main(["okbench"]) == 0
    assert seen_quick == [True, False]
    # The full run supersedes the quick one in the table.
    table = render_table(results_dir)
    assert "okbench (quick)" not in table and "| okbench | index_seconds |" in table


def test_each_benchmark_runs_in_its_own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Peak RSS and import times of one benchmark must not leak into the next one's."""
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: object) -> types.SimpleNamespace:
        calls.append(cmd)
        return types.SimpleNamespace(returncode=1 if cmd[-1] == "chat" else 0)

    monkeypatch.setattr("subprocess.run", fake_run)
    monkeypatch.delenv("QUICK", raising=False)
    assert bench_main.main(["--quick"]) == 1  # chat "failed"
    assert [c[-1] for c in calls] == list(bench_main.BENCHMARKS)
    assert all(c[1:4] == ["-m", "bench", "--quick"] for c in calls)


def test_unknown_benchmark_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_benchmarks(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        bench_main.main(["nosuch"])
    assert exc.value.code == 2


def test_readme_without_markers_is_left_alone(tmp_path: Path, results_dir: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no markers here\n")
    assert update_readme(readme, results_dir) is False
    assert readme.read_text() == "# no markers here\n"


def test_every_registered_benchmark_exposes_run_quick() -> None:
    """`make bench` runs exactly these; each must exist and take the quick flag."""
    assert set(bench_main.BENCHMARKS) >= {"indexing", "retrieval", "memory", "chat", "tui",
                                          "chunking"}
    for name, module_name in bench_main.BENCHMARKS.items():
        module = importlib.import_module(module_name)
        params = inspect.signature(module.run).parameters
        assert "quick" in params, name


def test_makefile_bench_target_passes_quick() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "python -m bench $(if $(filter-out 0 no false,$(QUICK)),--quick,)" in makefile
