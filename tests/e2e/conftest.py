"""Helpers for the end-to-end tests: run the installed `brain` as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fake_ollama import FakeOllamaServer

ROOT = Path(__file__).resolve().parents[2]
BRAIN = Path(sys.executable).with_name("brain")


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str

    def ok(self) -> Ran:
        assert self.code == 0, f"exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"
        return self


BrainRun = Callable[..., Ran]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOllamaServer]:
    """One fake Ollama for a module's tests (its subprocesses share it; each test scripts it)."""
    server = FakeOllamaServer().start()
    try:
        yield server
    finally:
        server.stop()


def brain_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_HOME", "OLLAMA_HOST")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", ANONYMIZED_TELEMETRY="False",
               PYTHONUNBUFFERED="1", NO_COLOR="1", COLUMNS="160")
    env.update(extra)
    return env


def write_config(home: Path, fake: FakeOllamaServer, *, embedding: str = "bundled",
                 extra: str = "") -> Path:
    """A config pointing at the fake Ollama (and, for speed, maybe at its embeddings)."""
    config = home / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    config.write_text(
        f'[ollama]\nhost = "{fake.url}"\ntimeout = 10.0\n\n'
        f'[embedding]\nmodel = "{embedding}"\n\n{extra}',
        encoding="utf-8",
    )
    return config


def run_brain(home: Path, *args: str, stdin: str | None = None, timeout: float = 120,
              prefix: tuple[str, ...] = (), env: dict[str, str] | None = None) -> Ran:
    """`brain --home HOME ARGS…` as a real subprocess of the installed entry point."""
    done = subprocess.run(
        [*prefix, str(BRAIN), "--home", str(home), *args], input=stdin, capture_output=True,
        text=True, timeout=timeout, env=env or brain_env(), cwd=home.parent,
        # Human output prints non-UTF-8 file names byte for byte, as `ls` does.
        errors="surrogateescape",
    )
    return Ran(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def brain_bin() -> Path:
    if not BRAIN.exists():
        pytest.skip(f"the `brain` entry point is not installed at {BRAIN} (pip install -e .)")
    return BRAIN
