"""Security basics, checked on the files a real flow leaves behind:

- every data and cache directory is 0700 and every file 0600 (SQLite's -wal/-shm, Chroma's
  segments, the embedding cache and logs included);
- at the default log level no document or memory text reaches the log files;
- `brain memory forget-all --yes` and `brain folders rm PATH` really remove the text: a unique
  marker is searched for in every byte of the stores (SQLite files with their WAL, Chroma's
  directory) after the operation.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from assistant.paths import resolve_paths
from tests.e2e.conftest import BRAIN, run_brain, write_config
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

EMBEDDING = "ollama:nomic-embed-text"
DOC_MARKER = "Zanzibarquokka"  # appears only in one note
MEMORY_MARKER = "Quixotelantern"  # appears only in one memory


@pytest.fixture(autouse=True)
def _needs_brain() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


def _flow(tmp_path: Path, fake: FakeOllamaServer) -> tuple[Path, Path]:
    """index, search, ask (with memory extraction), remember: every store gets written."""
    home, notes = tmp_path / "home", tmp_path / "notes"
    (notes / "private").mkdir(parents=True)
    (notes / "private" / "secret.md").write_text(
        f"# Passport\n\nMy passport is kept in the {DOC_MARKER} drawer of the study.\n")
    (notes / "public.md").write_text("# Garden\n\nWater the tomatoes every evening.\n")
    write_config(home, fake, embedding=EMBEDDING,
                 extra="[memory]\nextract_every_turns = 1\n")
    run_brain(home, "index", str(notes)).ok()
    run_brain(home, "search", f"where is the passport {DOC_MARKER}").ok()
    fake.script_chat(format_json={"memories": [{
        "type": "fact", "key": "lantern", "text": f"The user owns a {MEMORY_MARKER}.",
        "confidence": 0.9, "importance": 0.6}]}, match=lambda body: bool(body.get("format")))
    run_brain(home, "ask", "--wait", f"I own a {MEMORY_MARKER}. Where is my passport?").ok()
    run_brain(home, "memory", "add", f"My lamp is a {MEMORY_MARKER} too").ok()
    run_brain(home, "memory", "search", "lamp").ok()
    return home, notes


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()] if directory.exists() else []


def _holding(paths: list[Path], marker: str) -> list[str]:
    needles = (marker.encode(), marker.lower().encode(), marker.encode("utf-16-le"))
    found = []
    for path in paths:
        data = path.read_bytes()
        if any(n in data for n in needles):
            found.append(str(path))
    return found


def test_private_files_quiet_logs_and_removals_that_really_remove(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    home, notes = _flow(tmp_path, fake_ollama)
    paths = resolve_paths(home)

    # Modes: every directory 0700, every file 0600, whichever library created it.
    wrong = []
    for root in (paths.data_dir, paths.cache_dir, paths.config_dir):
        for path in [root, *root.rglob("*")]:
            if path.is_symlink() or path == paths.config_file:  # the config: this test wrote it
                continue
            mode = stat.S_IMODE(path.lstat().st_mode)
            want = 0o700 if path.is_dir() else 0o600
            if mode != want:
                wrong.append(f"{oct(mode)} {path}")
    assert not wrong, "not private:\n" + "\n".join(wrong)

    # Logs at the default level: no document or memory text.
    logs = _files(paths.log_dir)
    assert not _holding(logs, DOC_MARKER), "document text in the logs"
    assert not _holding(logs, MEMORY_MARKER), "memory text in the logs"

    # `brain folders rm`: the note's text is gone from every byte of the index.
    def index_files() -> list[Path]:
        found = [p for p in _files(paths.data_dir) if p.name.startswith("knowledge.sqlite3")]
        return found + _files(paths.vectors_dir)

    assert _holding(index_files(), DOC_MARKER), "the note was not indexed: nothing tested"
    run_brain(home, "folders", "rm", str(notes)).ok()
    assert not _holding(index_files(), DOC_MARKER)
    assert DOC_MARKER not in run_brain(home, "search", DOC_MARKER).out

    # `brain memory forget-all --yes`: no memory text anywhere in the memory store or Chroma.
    def memory_files() -> list[Path]:
        found = [p for p in _files(paths.data_dir) if p.name.startswith("memory.sqlite3")]
        return found + _files(paths.vectors_dir)

    assert _holding(memory_files(), MEMORY_MARKER), "the flow stored no memory: nothing tested"
    assert "forgot" in run_brain(home, "memory", "forget-all", "--yes").ok().out
    assert not _holding(memory_files(), MEMORY_MARKER)
    assert "no memories" in run_brain(home, "memory", "list").ok().out
