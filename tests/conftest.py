"""Shared fixtures: an isolated home per test, the network guard, offline model loading."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import netguard

pytest_plugins = [
    "tests.fixtures.ollama",
    "tests.fixtures.knowledge",
    "tests.fixtures.memory",
    "tests.fixtures.chat",
    "tests.fixtures.retrieval",
    "tests.fixtures.conversations",
    "tests.fixtures.mcp",
    "tests.stress",
]

# No library may try a model hub; everything loads from installed packages.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.pop("BRAIN_HOME", None)
os.environ.pop("OLLAMA_HOST", None)


def pytest_configure(config: pytest.Config) -> None:
    netguard.install()
    # Python subprocesses (the `brain` CLI, workers, servers) load the same guard.
    site = str(Path(__file__).parent / "netguard_site")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (site, os.environ.get("PYTHONPATH")) if p)


def pytest_unconfigure(config: pytest.Config) -> None:
    netguard.uninstall()


@pytest.fixture(autouse=True)
def _close_vector_clients() -> Iterator[None]:
    """Each test's Chroma clients are closed after it: a cached client per temporary store
    kept ~14 files open, and a whole run reached the thousands."""
    yield
    import sys

    vectors = sys.modules.get("indexing.chroma_clients")
    if vectors is not None:  # only when the test used the vector store
        vectors.close_all()


@pytest.fixture(autouse=True)
def detached_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The background `brain sessions finish` an in-process `brain ask` would start: recorded,
    not started (it would run without the test's fakes, after the test). Subprocess tests
    start the real one."""
    started: list[list[str]] = []

    def record(argv: list[str]) -> bool:
        started.append(list(argv))
        return True

    monkeypatch.setattr("assistant.cli.session_end.start_detached", record)
    return started


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An isolated `--home` (also exported as $BRAIN_HOME for subprocesses)."""
    root = tmp_path / "home"
    monkeypatch.setenv("BRAIN_HOME", str(root))
    yield root


@pytest.fixture(scope="session")
def real_embedder(tmp_path_factory: pytest.TempPathFactory):
    """The bundled all-MiniLM-L6-v2 with a per-session disk cache; loaded once (~5 s)."""
    from indexing.embedder import make_embedder

    cache = tmp_path_factory.mktemp("embed-cache")
    return make_embedder("bundled", cache_dir=cache, batch_size=64, device="cpu")
