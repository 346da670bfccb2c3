"""What a new user does in the first minute, in a real terminal.

The installed `brain` runs under tmux (a real pty, 160×48) against the fake Ollama server and an
isolated home with the default (bundled) embedding model: index a small folder with
`brain index`, open the TUI, ask a question and wait for the streamed answer, check the sources
pane names the right file with its scores, say "remember that …" and watch the memory pane,
quit with Ctrl+Q, start again: the conversation and the memory are still there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import BRAIN, brain_env, run_brain, write_config
from tests.e2e.terminal import Terminal, tmux_available
from tests.fake_ollama import FakeOllamaServer, chat_turn

pytestmark = [
    pytest.mark.skipif(not tmux_available(), reason="tmux is not installed (apt-get install tmux)"),
    pytest.mark.timeout(240),
]

NOTES = {
    "backups.md": (
        "# Backups\n\nThe laptop is backed up every night at 02:00 with restic to the NAS.\n"
        "Restore a file with `restic restore latest --target /tmp/restore`.\n"
    ),
    "tar.md": "# tar\n\nArchiving utility: create, list and extract tar archives.\n",
    "recipes/bread.md": "# Sourdough\n\nFeed the starter, wait 8 hours, bake at 250 °C.\n",
}
ANSWER = "Your laptop is backed up nightly at 02:00 with restic to the NAS [1]."
SIDEBAR = 104  # the sources and memory panes start at this column
# The fake Ollama's embeddings keep this test fast; test_offline.py runs the bundled model.
EMBEDDING = "ollama:nomic-embed-text"
MEMORY_ROW = re.compile(r"│ \[fact\] The user's NAS is called")


def _sidebar(screen: str) -> str:
    return "\n".join(line[SIDEBAR:] for line in screen.splitlines())


def test_first_minute(tmp_path: Path, fake_ollama: FakeOllamaServer) -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")
    home = tmp_path / "home"
    notes = tmp_path / "notes"
    for rel, text in NOTES.items():
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes / rel).write_text(text, encoding="utf-8")
    write_config(home, fake_ollama, embedding=EMBEDDING)

    indexed = run_brain(home, "index", str(notes)).ok()
    assert "3 added" in indexed.out, indexed.out

    fake_ollama.script_chat(ANSWER, chunk_delay=0.02, match=chat_turn)
    with Terminal([str(BRAIN), "--home", str(home)], env=brain_env()) as term:
        term.wait_for("ollama up", what="the status bar to find Ollama")
        term.wait_for("index 3 files", timeout=90, what="the index to be loaded")
        term.type_line("how is my laptop backed up?")
        screen = term.wait_for("restic to the NAS [1]", timeout=60, what="the streamed answer")
        screen = term.wait_for(re.compile(r"tokens · [\d.]+ s"), what="the answer's footer")
        side = _sidebar(screen)
        # Sources pane: the right file first, with its meaning and keyword scores.
        assert "Answer 1: how is my laptop backed up?" in side, side
        first = re.search(r"│ 1\s+(\S+)\s+(\d+)%\s+([\d.]+|—)\s+1\b", side)
        assert first, f"no scored first source in the sources pane:\n{side}"
        assert first.group(1) == "backups.md" and int(first.group(2)) > 0
        # The question really reached the model with the note as context.
        turn = [b for b in fake_ollama.chat_requests if chat_turn(b)][-1]
        prompt = "\n".join(str(m.get("content")) for m in turn["messages"])
        assert "restic restore latest" in prompt

        term.type_line("remember that my NAS is called vaultbox")
        term.wait_for(lambda s: MEMORY_ROW.search(_sidebar(s)), timeout=60,
                      what="the memory pane to show the new memory")

        term.send("C-q")
        assert term.wait_exit(timeout=60) == 0

    memories = run_brain(home, "memory", "list").ok()
    assert "The user's NAS is called vaultbox." in memories.out
    sessions = run_brain(home, "sessions", "list").ok()
    assert "how is my laptop backed up" in sessions.out, sessions.out

    with Terminal([str(BRAIN), "--home", str(home)], env=brain_env()) as term:
        term.wait_for(
            lambda s: all(text in s for text in (
                "how is my laptop backed up?", "restic to the NAS [1]",
                "remember that my NAS is called vaultbox")),
            timeout=60, what="the previous conversation (both turns) to be restored")
        term.wait_for(lambda s: MEMORY_ROW.search(_sidebar(s)), timeout=30,
                      what="the memory pane to list the memory again")
        term.send("C-q")
        assert term.wait_exit(timeout=60) == 0
