"""Issue 15, fast start: the first `make run` / `make test` says what it does, one line per step
with its duration, and keeps pip's configuration noise out (requirements/bootstrap.py)."""

from __future__ import annotations

import importlib.util
import io
import re
import shutil
import subprocess
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

    def run(command: list[str], *, optional: bool, meter: object = None) -> bool:
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


def _project(tmp_path: Path) -> Path:
    """The Makefile and the files its venv marker depends on, in a directory of their own."""
    project = tmp_path / "project"
    (project / "requirements").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", project / "Makefile")
    for name in ("requirements/lock.txt", "requirements/bootstrap.py", "pyproject.toml"):
        shutil.copy(ROOT / name, project / name)
    return project


def _record_steps(bootstrap: ModuleType, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    ran: list[list[str]] = []

    def run(command: list[str], *, optional: bool, meter: object = None) -> bool:
        ran.append(command)
        print("1.0 s")
        return True

    monkeypatch.setattr(bootstrap, "_run", run)
    return ran


def test_an_interrupted_first_run_is_rebuilt_by_the_next(
    bootstrap: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 (7): Ctrl+C during `python -m venv` leaves a .venv whose python runs but has
    no pip, and no .installed marker. The next `make run` runs the bootstrap again (the marker
    is missing), which must recreate the venv, not skip it and fail on "No module named pip"."""
    venv = tmp_path / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    project = _project(tmp_path)  # the Makefile's view: a venv, no marker
    (project / ".venv").symlink_to(venv)
    planned = subprocess.run(["make", "-n", "-C", str(project), "run"], capture_output=True,
                             text=True, check=True).stdout
    assert "requirements/bootstrap.py --venv .venv" in planned, planned

    ran = _record_steps(bootstrap, monkeypatch)
    assert bootstrap.main(["--venv", str(venv)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert ran[0] == [sys.executable, "-m", "venv", "--clear", str(venv)], ran[0]
    assert "the last install was interrupted (no pip in it)" in first, first
    # A healthy venv is kept as it is.
    ran.clear()
    assert not bootstrap._has_pip(venv / "bin" / "python")
    assert bootstrap._has_pip(Path(sys.executable))
    monkeypatch.setattr(bootstrap, "_has_pip", lambda python: True)
    assert bootstrap.main(["--venv", str(venv)]) == 0
    assert "already there" in capsys.readouterr().out.splitlines()[0]
    assert ran[0][1:3] == ["-m", "pip"]  # straight to the installs


def test_the_long_install_steps_count_packages_as_pip_collects_them(
    bootstrap: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 23 (7): the 166-package step was silent for minutes. pip (quiet on stdout) writes
    each package it resolves to its --log; the step's line counts them while it runs."""
    package = tmp_path / "fakepip" / "pip"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(textwrap.dedent("""
        import os, sys, time
        path = sys.argv[sys.argv.index("--log") + 1]
        seen = os.environ["FAKE_PIP_SEEN"]
        log = open(path, "a")
        for line in ["Collecting alpha==1.0", "Requirement already satisfied: beta==2 in /x",
                     "Collecting Gamma_Pkg==3", "Installing collected packages: alpha, gamma"]:
            log.write("2026-12-02T00:34:25,515 " + line + "\\n")
            log.flush()
            size = os.path.getsize(path)
            deadline = time.monotonic() + 60
            # the next line only once the meter has read this one (a busy machine's poll can
            # come late: waiting a fixed time let it skip a count)
            while time.monotonic() < deadline:
                try:
                    if int(open(seen).read() or 0) >= size:
                        break
                except (OSError, ValueError):
                    pass
                time.sleep(0.05)
    """))
    monkeypatch.setenv("PYTHONPATH", str(package.parent))
    seen = tmp_path / "seen"
    monkeypatch.setenv("FAKE_PIP_SEEN", str(seen))
    stream = io.StringIO()
    meter = bootstrap.Meter(3, stream, live=lambda: True)
    update = meter.update

    def update_and_say(log: str) -> None:
        update(log)
        seen.write_text(str(len(log.encode("utf-8"))))

    meter.update = update_and_say
    assert bootstrap._run([sys.executable, "-m", "pip", "install", "x"], optional=False,
                          meter=meter)
    drawn = stream.getvalue()
    for shown in ("1/3 packages", "2/3 packages", "3/3 packages, installing"):
        assert shown in drawn, drawn
    visible: list[str] = []
    for char in drawn:  # what the terminal shows after the backspaces: nothing left over
        if char == "\b":
            visible.pop()
        else:
            visible.append(char)
    assert "".join(visible).strip() == ""
    assert re.match(r"^\d+\.\d s\n", capsys.readouterr().out)
    quiet = io.StringIO()  # not a terminal: no redrawn counts in a log file
    bootstrap.Meter(3, quiet).update("Collecting alpha==1.0")
    assert quiet.getvalue() == ""


def _fake_project(tmp_path: Path, python_script: str) -> Path:
    """A copy of the Makefile beside an installed venv whose python is `python_script`."""
    project = _project(tmp_path)
    python = project / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(python_script)
    python.chmod(0o755)
    (project / ".venv" / ".installed").touch()  # newer than the files it depends on
    return project


def test_make_test_stress_runs_the_whole_suite_three_times_and_stops_at_red(
    tmp_path: Path
) -> None:
    """Issue 23 (8): zero flakes means the whole suite green three runs in a row with every
    core busy; `make test-stress` ran only tests/tui and tests/e2e, once."""
    calls = tmp_path / "calls"
    project = _fake_project(tmp_path, f'#!/bin/sh\necho "$*" >> {calls}\n')
    subprocess.run(["make", "-s", "-C", str(project), "test-stress"], check=True,
                   capture_output=True)
    assert calls.read_text().splitlines() == ["-m pytest --stress"] * 3
    calls.unlink()
    (project / ".venv" / "bin" / "python").write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\nexit 1\n')
    done = subprocess.run(["make", "-s", "-C", str(project), "test-stress"],
                          capture_output=True)
    assert done.returncode != 0 and len(calls.read_text().splitlines()) == 1
