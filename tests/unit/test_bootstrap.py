"""Issue 15, fast start: the first `make run` / `make test` says what it does, one line per step
with its duration, and keeps pip's configuration noise out (requirements/bootstrap.py)."""

from __future__ import annotations

import importlib.util
import re
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def bootstrap() -> ModuleType:
    path = ROOT / "requirements" / "bootstrap.py"
    spec = importlib.util.spec_from_file_location("bootstrap", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`python -m pip` becomes a script printing what the real one prints on this machine."""
    package = tmp_path / "fakepip" / "pip"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(textwrap.dedent("""
        import sys
        print("WARNING: Location '/srv/wheels/torch/' is ignored: it is neither a file nor a "
              "directory.", file=sys.stderr)
        print("WARNING: dep 1.0 does not provide the extra 'cuda'", file=sys.stderr)
        print("WARNING: a real dependency conflict", file=sys.stderr)
        sys.exit(int(sys.argv[-1] == "fail"))
    """))
    monkeypatch.setenv("PYTHONPATH", str(package.parent))
    return package


def test_pip_noise_is_dropped_and_real_warnings_kept(bootstrap: ModuleType, fake_pip: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert bootstrap._run([sys.executable, "-m", "pip", "install", "x"], optional=False)
    out = capsys.readouterr().out
    assert re.match(r"^\d+\.\d s\n", out), out  # the step's duration on its line
    assert "a real dependency conflict" in out
    assert "is ignored" not in out and "does not provide the extra" not in out


def test_a_failed_step_shows_everything_and_an_optional_one_is_skipped(
    bootstrap: ModuleType, fake_pip: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not bootstrap._run([sys.executable, "-m", "pip", "fail"], optional=False)
    captured = capsys.readouterr()
    assert captured.out.startswith("FAILED after ")
    assert "is ignored" in captured.err  # all of pip's output, to diagnose
    assert not bootstrap._run([sys.executable, "-m", "pip", "fail"], optional=True)
    assert "skipped after" in capsys.readouterr().out


def test_one_line_per_step_then_the_total(bootstrap: ModuleType, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[list[str]] = []

    def run(command: list[str], *, optional: bool) -> bool:
        ran.append(command)
        print("1.0 s")
        return True

    monkeypatch.setattr(bootstrap, "_run", run)
    assert bootstrap.main(["--venv", str(tmp_path / "venv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    steps = [line for line in lines if line.startswith("[")]
    assert [s.split("]")[0] for s in steps] == [f"[{n}/6" for n in range(1, 7)]
    assert all(s.endswith("… 1.0 s") for s in steps), steps
    assert "torch 2.13.0 (CPU build)" in steps[1]
    assert re.fullmatch(r"ready in \d+ s", lines[-1])
    assert ran[1][-1] == "torch==2.13.0"  # torch alone, before anything can pull another build
