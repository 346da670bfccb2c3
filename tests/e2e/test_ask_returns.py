"""`brain ask` returns when its answer ends: memory extraction (as slow as an answer on a
laptop) runs in a detached `brain sessions finish` that never holds the terminal, unless
`--wait` is given (installed entry point, fake Ollama, real stores)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import run_brain, write_config
from tests.fake_ollama import FakeOllamaServer

pytestmark = pytest.mark.timeout(300)

EXTRACTION_DELAY = 6.0  # seconds the model takes to extract (the request timeout is 10)


def _is_extraction(body: dict[str, Any]) -> bool:
    return bool(body.get("format")) and "memories" in json.dumps(body.get("format"))


def _memories(home: Path) -> list[str]:
    listed = run_brain(home, "memory", "list", "--json").ok()
    return [m["text"] for m in json.loads(listed.out)["memories"]]


@pytest.fixture
def home(tmp_path: Path, fake_ollama: FakeOllamaServer, brain_bin: Path) -> Path:
    root = tmp_path / "home"
    write_config(root, fake_ollama, embedding="ollama:nomic-embed-text")
    return root


def _script_extraction(fake: FakeOllamaServer, text: str) -> None:
    fake.script_chat(format_json={"memories": [{
        "type": "fact", "key": "home_city", "text": text, "confidence": 0.9,
        "importance": 0.7}]}, match=_is_extraction, delay=EXTRACTION_DELAY)


def test_ask_exits_before_extraction_and_the_memory_arrives_later(
    home: Path, fake_ollama: FakeOllamaServer
) -> None:
    _script_extraction(fake_ollama, "The user lives in Lisbon.")
    started = time.monotonic()
    # capture_output: had the background run kept stdout or stderr, this would wait for it.
    done = run_brain(home, "ask", "I moved to Lisbon, what's the time zone?", "--json",
                     "--no-knowledge").ok()
    took = time.monotonic() - started
    assert json.loads(done.out)["answer"].startswith("echo: I moved to Lisbon")
    assert "memory extraction" not in done.err
    assert _memories(home) == []  # ask did not wait for the extraction
    deadline = time.monotonic() + 120
    while (found := _memories(home)) == [] and time.monotonic() < deadline:
        time.sleep(1)
    assert found == ["The user lives in Lisbon."]
    print(f"ask without --wait: {took:.1f} s (extraction takes {EXTRACTION_DELAY:g} s)")


def test_wait_runs_extraction_before_exiting(home: Path, fake_ollama: FakeOllamaServer) -> None:
    _script_extraction(fake_ollama, "The user lives in Porto.")
    started = time.monotonic()
    run_brain(home, "ask", "I moved to Porto, what's the time zone?", "--wait",
              "--no-knowledge").ok()
    assert time.monotonic() - started >= EXTRACTION_DELAY
    assert _memories(home) == ["The user lives in Porto."]
