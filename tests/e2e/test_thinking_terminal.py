"""A thinking model in a real terminal (tmux, 160×48) against the fake Ollama server.

The default `qwen3:4b` is the thinking-only Qwen3-4B-Thinking-2507: with `think` on, Ollama
streams its reasoning in `message.thinking` before the answer (server/routes.go ChatHandler,
model/parsers/qwen3.go), and before the first byte it sends nothing at all while it loads the
model and reads the prompt (streamResponse writes headers with the first chunk). The user must
see what is going on at every moment, and never the reasoning as the answer.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import BRAIN, brain_env, run_brain, write_config
from tests.e2e.terminal import Terminal, tmux_available
from tests.fake_ollama import FakeOllamaServer, FakeTiming, chat_turn

pytestmark = [
    pytest.mark.skipif(not tmux_available(), reason="tmux is not installed (apt-get install tmux)"),
    pytest.mark.timeout(240),
]

EMBEDDING = "ollama:nomic-embed-text"  # the fake's embeddings: fast, no model to load
REASONING = " ".join(["The user asks about backups, so I recall restic and the NAS."] * 6)
ANSWER = "Backups run nightly with restic to the NAS."


def _installed() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


def test_a_thinking_answer_in_the_tui(tmp_path: Path, fake_ollama: FakeOllamaServer) -> None:
    _installed()
    home = tmp_path / "home"
    write_config(home, fake_ollama, embedding=EMBEDDING)
    fake_ollama.script_chat(ANSWER, thinking=REASONING, chunk_delay=0.06, match=chat_turn)
    with Terminal([str(BRAIN), "--home", str(home)], env=brain_env()) as term:
        term.wait_for("ollama up", what="the status bar to find Ollama")
        term.wait_for(lambda s: fake_ollama.loaded() and not fake_ollama.busy(), timeout=60,
                      what="the preload at start")
        term.type_line("how are my backups done?")
        screen = term.wait_for(re.compile(r"▶ thinking… \(\d+ s\)"), timeout=60,
                               what="the collapsed thinking line while the model reasons")
        assert "restic and the NAS" not in screen  # collapsed: the reasoning is not shown
        screen = term.wait_for(re.compile(r"tokens · [\d.]+ s"), timeout=60,
                               what="the answer's footer")
        assert re.search(r"▶ thought for \d+ s", screen), screen
        assert ANSWER in screen and "restic and the NAS" not in screen
        # The line above the answer, the answer below it.
        assert screen.index("thought for") < screen.index(ANSWER)
        # Shift+Tab from the message box reaches the answer (its keys in the footer), and
        # Enter opens its reasoning.
        term.send("BTab")
        term.wait_for("t Show thinking", what="the answer focused")
        term.send("Enter")
        screen = term.wait_for("▼ thought for", what="the reasoning opened")
        assert "I recall restic and the NAS" in screen
        term.send("C-q")
        assert term.wait_exit(timeout=60) == 0
    shown = run_brain(home, "sessions", "list").ok()
    assert "how are my backups done" in shown.out


def test_brain_ask_on_a_terminal_says_what_ollama_is_doing(
    tmp_path: Path, fake_ollama: FakeOllamaServer,
) -> None:
    _installed()
    home = tmp_path / "home"
    write_config(home, fake_ollama, embedding=EMBEDDING)
    # A cold model: Ollama loads it in silence (4 s here, minutes on a laptop's CPU).
    fake_ollama.timing = FakeTiming(load_seconds=4.0)
    fake_ollama.script_chat(ANSWER, thinking=REASONING, chunk_delay=0.06, match=chat_turn)
    with Terminal([str(BRAIN), "--home", str(home), "ask", "how are my backups done?"],
                  env=brain_env()) as term:
        term.wait_for(re.compile(r"loading qwen3:4b… \d+ s"), timeout=60,
                      what="the load on stderr")
        term.wait_for(re.compile(r"thinking… \d+ s"), timeout=60, what="the reasoning's clock")
        screen = term.wait_for(ANSWER, timeout=60, what="the answer")
        assert term.wait_exit(timeout=60) == 0
        screen = term.screen()
        assert "restic and the NAS" not in screen  # the reasoning is not printed by default
        assert "loading qwen3:4b" not in screen  # the status line was cleared
