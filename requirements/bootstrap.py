"""Create or refresh .venv for `make run` / `make test`, saying what happens and how long it took.

One line per step ("[2/6] installing torch 2.13.0 (CPU build) … 61.2 s") instead of minutes of
silence. pip's own output is captured: shown in full when a step fails, otherwise only lines
that matter (the machine's package-index configuration makes pip print one "Location … is
ignored" warning per package, which says nothing about this project). The long steps (torch, the
pinned packages: minutes) count the packages pip has collected on their line as they go, read
from pip's own log (`--log`), so stdout keeps pip's quiet mode.

An interrupted first run (Ctrl+C while `python -m venv` was still installing pip) leaves a
.venv whose python runs but has no pip: the next run sees that and recreates the venv instead of
failing on "No module named pip" for ever. Standard library only: it runs on the system Python,
before the venv exists.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
# pip notes that are about the machine's pip configuration or a dependency's metadata, not
# about this install: an extra index location that lacks a package, an extra that a newer
# release of a dependency dropped.
NOISE = (
    re.compile(r"^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$"),
    re.compile(r"^WARNING: \S+ \S+ does not provide the extra '[^']+'$"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv")
    args = parser.parse_args(argv)
    if sys.version_info < (3, 11):  # noqa: UP036 - runs on whatever python3 the user has
        print(f"second-brain needs Python 3.11 or newer (found: {sys.version.split()[0]})")
        return 1
    venv: Path = args.venv
    python = venv / "bin" / "python"
    pins = [line.strip() for line in LOCK.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]
    torch = next(p for p in pins if p.startswith("torch=="))
    started = time.monotonic()
    steps = [
        _venv_step(venv, python),
        # First and alone, so nothing can pull a multi-GB CUDA build of it.
        (f"installing {torch.replace('==', ' ')} (CPU build)", _pip(python, torch)),
        (f"installing {len(pins)} pinned packages (requirements/lock.txt)",
         _pip(python, "-r", str(LOCK))),
        ("installing second-brain itself (editable)", _pip(python, "--no-deps", "-e", str(ROOT))),
        ("compiling bytecode (a faster first start)",
         [str(python), "-m", "compileall", "-q", "-j0", "assistant", "indexing", "tui"]),
        # Optional: without it the first `brain index` makes the same export into the cache.
        ("exporting the embedding model to ONNX (searches then start without torch)",
         [str(python), "-m", "indexing.embedders.onnx_export", "--install"]),
    ]
    for number, (title, command) in enumerate(steps, start=1):
        optional = number == len(steps)
        print(f"[{number}/{len(steps)}] {title} …", end=" ", flush=True)
        if command is None:
            print("already there")
            continue
        # The pip steps that take minutes; torch's own dependencies are not in a count.
        meter = Meter(len(pins) if number == 3 else None, sys.stdout) if number in (2, 3) else None
        ok = _run(command, optional=optional, meter=meter)
        if not ok and not optional:
            return 1
    print(f"ready in {time.monotonic() - started:.0f} s", flush=True)
    return 0


def _venv_step(venv: Path, python: Path) -> tuple[str, list[str] | None]:
    """Create the venv, or recreate one a previous run left unusable (no pip in it)."""
    version = f"{sys.executable}, Python {sys.version.split()[0]}"
    if not python.exists():
        return f"creating {venv.name} ({version})", [sys.executable, "-m", "venv", str(venv)]
    if _has_pip(python):
        return f"creating {venv.name} ({version})", None
    return (f"recreating {venv.name}: the last install was interrupted (no pip in it) ({version})",
            [sys.executable, "-m", "venv", "--clear", str(venv)])


def _has_pip(python: Path) -> bool:
    try:
        done = subprocess.run([str(python), "-c", "import pip"], capture_output=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired):  # a dangling interpreter link, a hung one
        return False
    return done.returncode == 0


def _pip(python: Path, *args: str) -> list[str]:
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check",
            "--no-input", "--progress-bar", "off", "-q", *args]


def _run(command: list[str], *, optional: bool, meter: Meter | None = None) -> bool:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="brain-bootstrap-") as tmp:
        log = Path(tmp) / "pip.log"
        if meter is not None:
            command = [*command, "--log", str(log)]
        with (Path(tmp) / "output").open("w+", encoding="utf-8", errors="replace") as output:
            process = subprocess.Popen(command, cwd=ROOT, stdout=output,
                                       stderr=subprocess.STDOUT, text=True,
                                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
            while True:
                try:
                    process.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if meter is not None:
                        meter.update(_read(log))
            output.seek(0)
            text = output.read()
    if meter is not None:
        meter.clear()
    seconds = time.monotonic() - started
    lines = [line for line in text.splitlines() if line.strip()]
    if process.returncode != 0:
        if optional:
            last = lines[-1] if lines else f"exit {process.returncode}"
            print(f"skipped after {seconds:.1f} s ({last}); the first `brain index` does it")
            return False
        print(f"FAILED after {seconds:.1f} s:")
        print("\n".join(lines), file=sys.stderr)
        return False
    print(f"{seconds:.1f} s", flush=True)
    if command[1:3] == ["-m", "pip"]:
        # Real warnings (e.g. a dependency conflict) are kept; the configuration noise is not.
        for line in lines:
            if not any(p.match(line) for p in NOISE):
                print(f"    {line}")
    return True


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:  # pip has not opened its log yet
        return ""


# pip's log lines start with a timestamp; these name one package each as it is resolved.
_COLLECTED = re.compile(r"(?:Collecting|Requirement already satisfied:) ([A-Za-z0-9_.\-]+)")


class Meter:
    """"42/166 packages" on the step's line, rewritten in place as pip collects them, then
    "installing" once it unpacks them; drawn only on a terminal (a log file would get one copy
    per update) and erased before the step's duration is printed."""

    def __init__(self, total: int | None, stream: TextIO, *,
                 live: Callable[[], bool] | None = None) -> None:
        self.total = total
        self.stream = stream
        self.live = live if live is not None else stream.isatty
        self.shown = ""

    def update(self, log: str) -> None:
        names = {m.group(1).lower().replace("_", "-") for m in _COLLECTED.finditer(log)}
        count = len(names) if self.total is None else min(len(names), self.total)
        text = f"{count} packages" if self.total is None else f"{count}/{self.total} packages"
        if "Installing collected packages" in log:
            text += ", installing"
        self._show(text)

    def clear(self) -> None:
        self._show("")

    def _show(self, text: str) -> None:
        if text == self.shown or not self.live():
            return
        width = len(self.shown)
        # Back over the old text, blank it, back again: the line stays one line.
        self.stream.write("\b" * width + " " * width + "\b" * width + text)
        self.stream.flush()
        self.shown = text


if __name__ == "__main__":
    sys.exit(main())
