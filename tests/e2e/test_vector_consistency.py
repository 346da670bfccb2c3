"""A deleted vector store must not go unnoticed: `brain doctor` compares the counts and
`brain search` warns that it is searching by keywords only, until `brain index --sync` and
`brain memory reindex` repair it (through the installed `brain`, fake Ollama embeddings)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assistant.paths import resolve_paths
from tests.e2e.conftest import BRAIN, Ran, run_brain, write_config
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

NOTES = {
    f"topic{i}/note{j}.md": f"# Note {i}.{j}\n\nRestic backups of host{i} run at {j}:00.\n"
    for i in range(2) for j in range(3)
}


@pytest.fixture(autouse=True)
def _needs_brain() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


def _consistency(ran: Ran) -> dict:
    [check] = [c for c in json.loads(ran.out)["checks"] if c["name"] == "index consistency"]
    return check


def test_deleted_vector_store_is_reported_until_repaired(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    home, notes = tmp_path / "home", tmp_path / "notes"
    for rel, text in NOTES.items():
        (notes / rel).parent.mkdir(parents=True, exist_ok=True)
        (notes / rel).write_text(text, encoding="utf-8")
    write_config(home, fake_ollama, embedding="ollama:nomic-embed-text")
    run_brain(home, "index", str(notes)).ok()
    for text in ("I drink green tea every morning", "My NAS is called vaultbox"):
        run_brain(home, "memory", "add", text).ok()
    run_brain(home, "memory", "search", "tea").ok()  # writes the memory vectors

    healthy = _consistency(run_brain(home, "doctor", "--json"))
    assert healthy["ok"] and healthy["essential"] is False, healthy
    assert "6 chunks, 6 vectors" in healthy["detail"] and "2 memories, 2 vectors" in healthy[
        "detail"]
    assert "warning" not in run_brain(home, "search", "restic backups").ok().err

    shutil.rmtree(resolve_paths(home).vectors_dir)

    doctor = run_brain(home, "doctor")
    assert doctor.code == 0, doctor  # not essential: chat and keyword search still work
    [line] = [ln for ln in doctor.out.splitlines() if "index consistency" in ln]
    assert line.startswith(("!", "WARN")), line
    assert "6 indexed chunks but 0 vectors" in line and "2 embedded memories but 0" in line
    assert "brain index --sync" in line and "brain memory reindex" in line

    searched = run_brain(home, "search", "restic backups").ok()
    assert "Note" in searched.out  # keyword search still answers…
    assert "warning: the vector store holds no vectors for the 6 indexed chunks" in searched.err
    assert "brain index --sync" in searched.err  # …and says how to get meaning search back
    as_json = run_brain(home, "search", "restic backups", "--json").ok()
    assert "warnings" not in json.loads(as_json.out)  # the search schema is fixed: stderr
    assert "warning: the vector store holds no vectors" in as_json.err

    run_brain(home, "index", "--sync").ok()
    after_sync = _consistency(run_brain(home, "doctor", "--json"))
    assert not after_sync["ok"] and "brain memory reindex" in after_sync["hint"]
    assert "brain index --sync" not in after_sync["hint"]
    assert "warning" not in run_brain(home, "search", "restic backups").ok().err

    run_brain(home, "memory", "reindex").ok()
    repaired = _consistency(run_brain(home, "doctor", "--json"))
    assert repaired["ok"], repaired
    assert "6 chunks, 6 vectors" in repaired["detail"]
