"""Create or refresh .venv for `make run` / `make test`, saying what happens and how long it took.

One line per step ("[2/6] installing torch 2.13.0 (CPU build) … 61.2 s") instead of minutes of
silence. pip's own output is captured: shown in full when a step fails, otherwise only lines
that matter (the machine's package-index configuration makes pip print one "Location … is
ignored" warning per package, which says nothing about this project). Standard library only:
it runs on the system Python, before the venv exists.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

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
        (f"creating {venv.name} ({sys.executable}, Python {sys.version.split()[0]})",
         None if python.exists() else [sys.executable, "-m", "venv", str(venv)]),
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
        ok = _run(command, optional=optional)
        if not ok and not optional:
            return 1
    print(f"ready in {time.monotonic() - started:.0f} s", flush=True)
    return 0


def _pip(python: Path, *args: str) -> list[str]:
    return [str(python), "-m", "pip", "install", "--disable-pip-version-check",
            "--no-input", "--progress-bar", "off", "-q", *args]


def _run(command: list[str], *, optional: bool) -> bool:
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    seconds = time.monotonic() - started
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    if done.returncode != 0:
        if optional:
            last = lines[-1] if lines else f"exit {done.returncode}"
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


if __name__ == "__main__":
    sys.exit(main())
