"""`brain` with no command opens the TUI in a real terminal (a pty) and Ctrl+Q quits cleanly."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pexpect

from tests.fake_ollama import FakeOllamaServer

ROOT = Path(__file__).resolve().parents[2]
# Between two words on screen: spaces and the colour codes of Textual's repaint.
_GAP = r"(?:\s|\x1b\[[0-9;?]*[A-Za-z])*"


def on_screen(text: str) -> re.Pattern[str]:
    """`text` as the terminal receives it: Textual repaints only what changed, with colour
    codes between the words (the status line goes from "ollama checking…" to "ollama up"
    once the embedding model has loaded, long after the first paint)."""
    return re.compile(_GAP.join(re.escape(word) for word in text.split()))


def expect_all(child: pexpect.spawn, *texts: str) -> None:
    """Wait until every text has been on screen, in whatever order the repaints came."""
    waiting = [on_screen(text) for text in texts]
    while waiting:
        del waiting[child.expect(waiting)]


def test_brain_opens_tui_and_quits_with_ctrl_q(home: Path, fake_ollama: FakeOllamaServer) -> None:
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
        # "about": the first paint draws the cursor over the placeholder's "A".
        expect_all(child, "about your notes", "ollama up", "index 0 files / 0 chunks")
        child.sendcontrol("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    state = json.loads((home / "data" / "ui_state.json").read_text())
    assert state["theme"] == "brain-dark"
