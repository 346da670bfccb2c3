"""A damaged store gives a clear error naming the file and the recovery, never a panic, and is
never read as empty (issue 13). Through the installed `brain`:

- `chroma/chroma.sqlite3` damaged the ways that made Chroma panic (a schema text or a catalog
  row that is not UTF-8: a Rust panic raised as `pyo3_runtime.PanicException`, or an abort of
  the whole process) or emptied: `brain search` and `brain memory search` fall back to keywords
  with a warning naming the file and the recovery, `brain index --rebuild` fails with one
  line saying the same, `brain doctor` answers within seconds;
- each SQLite store damaged or truncated to 0 bytes: the command names that file and says how
  to recover and what is lost; an empty memory store is never shown as "no memories".
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.paths import resolve_paths
from tests.e2e.conftest import BRAIN, Ran, run_brain, write_config
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

EMBEDDING = "ollama:nomic-embed-text"
RECOVERY = ("brain index --rebuild", "brain memory reindex", "brain sessions reindex")


@pytest.fixture(autouse=True)
def _needs_brain() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


@pytest.fixture(scope="module")
def module_ollama() -> Iterator[FakeOllamaServer]:
    """One fake Ollama for the module: every test copies the home made against it."""
    fake = FakeOllamaServer().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def populated(tmp_path_factory: pytest.TempPathFactory, module_ollama: FakeOllamaServer) -> Path:
    """Made once: every store written (index, vectors, memory, a session, the log)."""
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")
    fake_ollama = module_ollama
    root = tmp_path_factory.mktemp("damaged")
    home, notes = root / "good", root / "notes"
    notes.mkdir()
    for i in range(12):
        (notes / f"host{i}.md").write_text(
            f"# Host {i}\n\nRestic backups of host{i} run at {i}:00; rotate the vault keys.\n",
            encoding="utf-8")
    write_config(home, fake_ollama, embedding=EMBEDDING)
    run_brain(home, "index", str(notes)).ok()
    run_brain(home, "memory", "add", "I drink green tea every morning").ok()
    run_brain(home, "memory", "search", "tea").ok()  # writes the memory vector
    fake_ollama.script_chat(format_json={"memories": []}, match=lambda b: bool(b.get("format")))
    fake_ollama.script_chat("At night.", match=lambda b: not b.get("format"))
    run_brain(home, "ask", "when do the backups run?").ok()  # a session and a log entry
    return home


def _copy(populated: Path, name: str) -> Path:
    home = populated.with_name(name)
    shutil.copytree(populated, home)
    # The config names the fake Ollama; nothing in it depends on the home's path.
    return home


def _garble(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())

    def flip(needle: bytes, at: int) -> None:
        found = [i for i in range(len(data)) if data.startswith(needle, i)]
        assert found, needle
        for i in found:
            data[i + at] = 0xFF  # not UTF-8: Chroma's Rust side panicked decoding it

    if how == "schema":
        flip(b"CREATE TABLE segments", 15)
    elif how == "catalog":
        flip(b'{"defaults":{"string"', 5)
    elif how == "empty":
        data = bytearray()
    elif how == "pages":
        for offset in range(4096, len(data), 4096):
            data[offset:offset + 200] = os.urandom(200)
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _clean(ran: Ran) -> None:
    both = ran.out + ran.err
    assert ran.code in (0, 1), (ran.code, both[-2000:])  # 134 = aborted by a Rust panic
    assert "Traceback" not in both and "panicked" not in both and "PanicException" not in both, \
        both[-2000:]


@pytest.mark.parametrize("how", ["schema", "catalog", "empty"])
def test_a_damaged_vector_store_never_panics(populated: Path, how: str) -> None:
    home = _copy(populated, f"vectors-{how}")
    chroma = resolve_paths(home).vectors_dir
    _garble(chroma / "chroma.sqlite3", how)
    named = str(chroma / "chroma.sqlite3")

    for args, found in ((("search", "restic backups"), "host"),
                        (("memory", "search", "tea"), "green tea")):
        ran = run_brain(home, *args)
        _clean(ran)
        assert ran.code == 0, (args, ran.err)
        assert found in ran.out  # by keyword
        assert named in ran.err and "keywords only" in ran.err, ran.err
        assert all(step in ran.err for step in RECOVERY), ran.err

    rebuilt = run_brain(home, "index", "--rebuild")
    _clean(rebuilt)
    assert rebuilt.code == 1
    first, *rest = rebuilt.err.strip().splitlines()
    assert first.startswith("brain: error:") and named in first
    assert len(rest) == 1 and all(step in rest[0] for step in RECOVERY), rebuilt.err

    start = time.monotonic()
    doctor = run_brain(home, "doctor")
    assert time.monotonic() - start < 30, "doctor must answer within seconds"
    _clean(doctor)
    assert doctor.code == 1 and "no answer within" not in doctor.out, doctor.out
    assert named in doctor.out and "brain index --rebuild" in doctor.out, doctor.out

    if how != "schema":
        return
    shutil.move(str(chroma), f"{chroma}.damaged")  # what the hint says, step by step
    run_brain(home, "index", "--rebuild").ok()
    run_brain(home, "memory", "reindex").ok()
    run_brain(home, "sessions", "reindex").ok()
    repaired = run_brain(home, "search", "restic backups").ok()
    assert "keywords only" not in repaired.err


STORES = {  # file -> (a command that reads it, what the recovery hint must say)
    "memory.sqlite3": (("memory", "list"), "only in this file"),
    "knowledge.sqlite3": (("search", "restic"), "brain index PATH"),
    "sessions.sqlite3": (("sessions", "list"), "chats in it are lost"),
    "retrieval_log.sqlite3": (("log",), "new log"),
}


@pytest.mark.parametrize("how", ["empty", "pages"])
@pytest.mark.parametrize("name", sorted(STORES))
def test_a_damaged_or_empty_database_is_named_never_read_as_empty(
    populated: Path, name: str, how: str
) -> None:
    home = _copy(populated, f"{name}-{how}")
    path = resolve_paths(home).data_dir / name
    assert path.stat().st_size > 0
    _garble(path, how)
    args, recovery = STORES[name]
    ran = run_brain(home, *args)
    _clean(ran)
    assert ran.code == 1, ran.out
    assert str(path) in ran.err and recovery in ran.err, ran.err
    assert len(ran.err.strip().splitlines()) == 2, ran.err  # the error and its hint
    assert "no memories" not in ran.out and "no searches" not in ran.out
    if how == "empty":
        assert path.stat().st_size == 0  # left as it was: not replaced by an empty store
