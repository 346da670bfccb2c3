"""Crash and fault suite: the installed `brain`, killed or starved, never leaves a broken home.

SIGKILL lands at seeded random points during `brain index`, `brain memory import` and memory
extraction after `brain ask`; the next ordinary run must converge to the state of a clean,
uninterrupted run in another home — the same chunk ids and content, FTS rows and vectors, the same
memories with their vectors, no duplicates, and the user's own edits intact. The fake Ollama
serves the embeddings (`ollama:` model) so each run starts in about a second.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import BRAIN, brain_env, run_brain, write_config
from tests.e2e.stores import dump, knowledge_state, memory_rows, memory_state
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SEED = 20261129
# Kill runs per scenario; BRAIN_FAULT_RUNS=N scales them for a longer soak (default: 14 kills,
# about a minute on an idle 2-core machine).
SCALE = max(1, int(os.environ.get("BRAIN_FAULT_RUNS", "1")))
EMBEDDING = "ollama:nomic-embed-text"
DIMENSION = 768  # the fake's nomic-embed-text
WORDS = ["restic", "backup", "tar", "archive", "kernel", "python", "garden", "bread", "coffee",
         "meeting", "plan", "invoice", "router", "printer", "docker", "compose", "vault", "key"]


@pytest.fixture(autouse=True)
def _needs_brain() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


def _home(base: Path, name: str, fake: FakeOllamaServer, extra: str = "") -> Path:
    home = base / name
    write_config(home, fake, embedding=EMBEDDING, extra=extra)
    return home


def _write_notes(folder: Path, n: int, rng: random.Random) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        sub = folder / f"topic{i % 5}"
        sub.mkdir(exist_ok=True)
        paragraphs = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(14))
                                for _ in range(3)) for _ in range(3)]
        (sub / f"note{i}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paragraphs) + "\n")


def _kill_after(args: list[str], home: Path, delay: float, *, wait_for: str | None = None
                ) -> str:
    """Start `brain ARGS`, SIGKILL it `delay` s after start (or after `wait_for` appears on
    stdout). Returns how it ended ("killed", or "finished" if it beat the kill)."""
    proc = subprocess.Popen([str(BRAIN), "--home", str(home), *args], env=brain_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=home.parent)
    try:
        if wait_for is not None:
            assert proc.stdout is not None
            for line in proc.stdout:  # blocks line by line; ends at EOF
                if wait_for in line:
                    break
        try:
            proc.wait(timeout=delay)  # the kill point: `delay` s into the work
            return "finished"
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            return "killed"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def _timed(home: Path, *args: str) -> float:
    start = time.perf_counter()
    run_brain(home, *args).ok()
    return time.perf_counter() - start


def test_sigkill_during_index_converges(tmp_path: Path, fake_ollama: FakeOllamaServer) -> None:
    rng = random.Random(SEED)
    notes = tmp_path / "notes"
    _write_notes(notes, 120, rng)
    clean_home = _home(tmp_path, "clean", fake_ollama)
    duration = _timed(clean_home, "index", str(notes))
    clean = knowledge_state(clean_home)
    assert clean["chunks"] == clean["vectors"] and clean["fts_rows"] == len(clean["chunks"])
    assert len(clean["files"]) == 120

    outcomes = []
    for n in range(5 * SCALE):  # + a second kill during recovery in every other run
        home = _home(tmp_path, f"crash{n}", fake_ollama)
        delay = rng.uniform(0.2, duration)
        outcomes.append(_kill_after(["index", str(notes)], home, delay))
        if n % 2:  # a second kill on top of the first, during the recovery run
            _kill_after(["index", str(notes)], home, rng.uniform(0.2, duration / 2))
        run_brain(home, "index", str(notes)).ok()  # the user simply runs it again
        state = knowledge_state(home)
        assert state == clean, f"run {n} (killed after {delay:.2f} s) did not converge:\n" \
                               f"{dump({k: state[k] for k in ('files', 'fts_rows')})}"
    assert "killed" in outcomes, "every run finished before its kill: the test tested nothing"


def _memory_lines(n: int, rng: random.Random) -> list[str]:
    lines = []
    for i in range(n):
        text = f"The user keeps item {i}: " + " ".join(rng.choice(WORDS) for _ in range(6))
        lines.append(json.dumps({"text": text, "type": rng.choice(["fact", "preference"])}))
    lines.append(json.dumps({"text": "The user repeats this line.", "type": "fact"}))
    lines.append(json.dumps({"text": "The user repeats this line.", "type": "fact"}))
    return lines


def _user_memory(home: Path) -> str:
    run_brain(home, "memory", "add", "I drink green tea every morning").ok()
    return "I drink green tea every morning"


def _settled_memory(home: Path) -> dict:
    """Memory state once vectors caught up (the CLI writes them lazily; any recall syncs)."""
    run_brain(home, "memory", "search", "tea").ok()
    return memory_state(home, model=EMBEDDING, dimension=DIMENSION)


def _user_edit(home: Path) -> str:
    """A memory the user added and corrected by hand before the crash."""
    run_brain(home, "memory", "add", "I drink tea in the morning").ok()
    memory = next(r for r in memory_rows(home) if r["text"].startswith("I drink tea"))
    run_brain(home, "memory", "edit", memory["id"], "I drink green tea every morning").ok()
    return "I drink green tea every morning"


def test_sigkill_during_memory_import_converges(tmp_path: Path, fake_ollama: FakeOllamaServer
                                                ) -> None:
    rng = random.Random(SEED + 1)
    source = tmp_path / "memories.jsonl"
    source.write_text("\n".join(_memory_lines(700, rng)) + "\n", encoding="utf-8")

    clean_home = _home(tmp_path, "clean", fake_ollama)
    edited = _user_edit(clean_home)
    duration = _timed(clean_home, "memory", "import", str(source))
    clean = _settled_memory(clean_home)
    assert clean["count"] == 703 and clean["duplicates"] == [("fact", None,
                                                               "The user repeats this line.")]
    assert not clean["vectors_missing"] and not clean["vectors_orphaned"]

    outcomes: list[str] = []
    resumes: list[str] = []
    for n in range(3 * SCALE):
        home = _home(tmp_path, f"crash{n}", fake_ollama)
        assert _user_edit(home) == edited
        delay = rng.uniform(0.3, duration)
        outcomes.append(_kill_after(["memory", "import", str(source)], home, delay))
        again = run_brain(home, "memory", "import", str(source))  # the user simply runs it again
        if again.code:  # the kill came after the last batch: the import was already complete
            assert "was already imported on" in again.err and "--again" in again.err, again.err
            resumes.append("complete")
        else:
            resumes.append("resumed" if "resuming import:" in again.err else "from scratch")
        state = _settled_memory(home)
        assert state == clean, f"run {n} (killed after {delay:.2f} s, re-run {resumes[-1]}) " \
                               f"did not converge: {state['count']} memories vs {clean['count']}"
        assert any(r["text"] == edited for r in memory_rows(home))
    assert "killed" in outcomes, "every run finished before its kill: the test tested nothing"
    print(f"memory import kills: {outcomes}, re-runs: {resumes}")


EXTRACTED = {"memories": [
    {"type": "fact", "key": "nas_name", "text": "The user's NAS is called vaultbox.",
     "confidence": 0.95, "importance": 0.7},
    {"type": "preference", "key": "backup_tool", "text": "The user prefers restic for backups.",
     "confidence": 0.9, "importance": 0.6},
]}
EXTRACT_CONFIG = "[memory]\nextract_every_turns = 1\n"


def _is_extraction(body: dict) -> bool:
    return bool(body.get("format"))


def _drop_scripts(fake: FakeOllamaServer) -> None:
    with fake._lock:
        fake._scripts.pop("/api/chat", None)


def test_sigkill_during_memory_extraction_converges(tmp_path: Path, fake_ollama: FakeOllamaServer
                                                    ) -> None:
    rng = random.Random(SEED + 2)

    def script(delay: float = 0.0) -> None:
        fake_ollama.script_chat("Noted, restic to vaultbox [1].", match=lambda b: not b.get(
            "format"))
        fake_ollama.script_chat(format_json=EXTRACTED, delay=delay, match=_is_extraction)

    def ask(home: Path, *extra: str) -> None:
        run_brain(home, "ask", "--wait", *extra,
                  "My NAS is vaultbox and I back up with restic.").ok()

    clean_home = _home(tmp_path, "clean", fake_ollama, EXTRACT_CONFIG)
    edited = _user_memory(clean_home)
    script()
    ask(clean_home)
    script()
    ask(clean_home, "--continue")
    clean = _settled_memory(clean_home)
    texts = [text for (_, _, text), _ in clean["memories"]]
    assert "The user's NAS is called vaultbox." in texts and edited in texts
    assert not clean["duplicates"]

    outcomes = []
    for n in range(4 * SCALE):
        home = _home(tmp_path, f"crash{n}", fake_ollama, EXTRACT_CONFIG)
        _user_memory(home)
        fake_ollama.clear_requests()
        # The extraction reply is held back ~1 s; the kill lands before, during or after
        # the model's answer is stored.
        script(delay=1.0)
        delay = rng.uniform(0.0, 2.0)
        outcomes.append(_kill_after(
            ["ask", "--wait", "My NAS is vaultbox and I back up with restic."], home, delay,
            wait_for="Noted, restic"))
        _drop_scripts(fake_ollama)  # what the killed run did not consume
        script()
        ask(home, "--continue")
        state = _settled_memory(home)
        assert state == clean, f"run {n} (killed {delay:.2f} s after the answer):\n{dump(state)}"
    assert "killed" in outcomes, "every run finished before its kill: the test tested nothing"
