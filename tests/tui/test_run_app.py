"""`brain` with no command opens the TUI in a real terminal (a pty) and Ctrl+Q quits cleanly."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect

from tests.fake_ollama import FakeOllama

ROOT = Path(__file__).resolve().parents[2]


def test_brain_opens_tui_and_quits_with_ctrl_q(home: Path, fake_ollama: FakeOllama) -> None:
    config = home / "config"
    config.mkdir(parents=True, mode=0o700)
    # Embeddings through the fake Ollama: no torch in this test, and the status bar can show
    # the opened index.
    (config / "config.toml").write_text(
        f'[ollama]\nhost = "{fake_ollama.url}"\ntimeout = 5.0\n'
        '[embedding]\nmodel = "ollama:nomic-embed-text:latest"\n'
        "[indexing]\nwatch = false\n",
        encoding="utf-8",
    )
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="36")
    child = pexpect.spawn(
        sys.executable, ["-m", "assistant.cli.main", "--home", str(home)],
        cwd=str(ROOT), env=env, dimensions=(36, 120), timeout=60, encoding="utf-8",
    )
    try:
        child.expect("Ask about your notes")
        child.expect("ollama up")
        child.expect(r"index 0 files / 0 chunks")
        child.sendcontrol("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    state = json.loads((home / "data" / "ui_state.json").read_text())
    assert state["theme"] == "brain-dark"
