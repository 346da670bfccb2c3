"""Damaged stores, two processes, a read-only disk and a misbehaving Ollama, through the installed
`brain`: every case ends in a clear message (never a traceback) and nothing lost or half-written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from assistant.paths import resolve_paths
from tests.e2e.conftest import BRAIN, Ran, brain_env, run_brain, write_config
from tests.e2e.stores import knowledge_state, memory_state
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

EMBEDDING = "ollama:nomic-embed-text"
DIMENSION = 768
NOTES = {
    f"topic{i}/note{j}.md": f"# Note {i}.{j}\n\nRestic backups of host{i} run at {j}:00.\n\n"
    f"Rotate the keys of vault{j} every {i + 2} weeks; check the printer in room {i}{j}.\n"
    for i in range(4) for j in range(6)
}


@pytest.fixture(autouse=True)
def _needs_brain() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


def _setup(tmp_path: Path, fake: FakeOllamaServer, name: str = "home") -> tuple[Path, Path]:
    home, notes = tmp_path / name, tmp_path / "notes"
    if not notes.exists():
        for rel, text in NOTES.items():
            (notes / rel).parent.mkdir(parents=True, exist_ok=True)
            (notes / rel).write_text(text, encoding="utf-8")
    write_config(home, fake, embedding=EMBEDDING)
    return home, notes


def _no_traceback(ran: Ran) -> None:
    assert "Traceback" not in ran.err and "Traceback" not in ran.out, ran.err[-3000:]


def _populated(tmp_path: Path, fake: FakeOllamaServer, name: str = "home") -> tuple[Path, Path]:
    home, notes = _setup(tmp_path, fake, name)
    run_brain(home, "index", str(notes)).ok()
    for text in ("I drink green tea every morning", "My NAS is called vaultbox"):
        run_brain(home, "memory", "add", text).ok()
    run_brain(home, "memory", "search", "tea").ok()  # writes the memory vectors
    return home, notes


def _state(home: Path) -> dict:
    return {"knowledge": knowledge_state(home),
            "memory": memory_state(home, model=EMBEDDING, dimension=DIMENSION)}


def test_corrupted_vector_store_is_reported_and_rebuilt_from_files_and_sqlite(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    home, _ = _populated(tmp_path, fake_ollama)
    before = _state(home)
    assert before["memory"]["count"] == 2 and not before["memory"]["vectors_missing"]
    chroma = resolve_paths(home).vectors_dir
    db = chroma / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    for offset in range(0, len(data), 4096):
        data[offset:offset + 64] = os.urandom(64)
    db.write_bytes(bytes(data))

    # Reading falls back to keywords, saying which file is damaged and how to repair it.
    fake_ollama.script_chat(format_json={"memories": []}, match=lambda b: bool(b.get("format")))
    fake_ollama.script_chat("At night.", match=lambda b: not b.get("format"))
    for args in (("search", "restic backups"), ("memory", "search", "tea"),
                 ("ask", "when do backups run?")):
        ran = run_brain(home, *args)
        _no_traceback(ran)
        assert ran.code == 0, (args, ran)
        assert "damaged" in ran.err and str(db) in ran.err, ran.err
        assert "brain index --rebuild" in ran.err and "brain memory reindex" in ran.err
    # Writing cannot: one line naming the file and the recovery.
    ran = run_brain(home, "index", "--sync")
    _no_traceback(ran)
    assert ran.code == 1 and str(db) in ran.err and "brain index --rebuild" in ran.err

    shutil.move(str(chroma), str(chroma) + ".damaged")  # what the hint says to do
    rebuilt = run_brain(home, "index", "--rebuild").ok()
    assert "cache hits" in rebuilt.out
    assert "re-embedded 2" in run_brain(home, "memory", "reindex").ok().out
    assert _state(home) == before


def test_deleted_vector_store_is_repaired_by_sync_and_memory_reindex(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    home, _ = _populated(tmp_path, fake_ollama)
    before = _state(home)
    shutil.rmtree(resolve_paths(home).vectors_dir)
    synced = run_brain(home, "index", "--sync").ok()
    assert f"repaired {len(before['knowledge']['chunks'])} vectors" in synced.out, synced.out
    run_brain(home, "memory", "reindex").ok()
    assert _state(home) == before


def test_doctor_checks_never_trip_over_each_other(tmp_path: Path, fake_ollama: FakeOllamaServer
                                                   ) -> None:
    """The checks run in threads; they once raced on numpy's first import (1 run in 3)."""
    home, _ = _setup(tmp_path, fake_ollama)
    for _ in range(3):
        ran = run_brain(home, "doctor")
        assert "ImportError" not in ran.out + ran.err, ran.out
        assert ran.code == 0, ran.out + ran.err


def test_two_processes_on_one_home_never_corrupt_it(tmp_path: Path, fake_ollama: FakeOllamaServer
                                                    ) -> None:
    clean_home, notes = _populated(tmp_path, fake_ollama, "clean")
    clean = knowledge_state(clean_home)
    home, _ = _setup(tmp_path, fake_ollama, "shared")
    results: list[Ran] = []

    def index() -> None:
        results.append(run_brain(home, "index", str(notes)))

    def remember(i: int) -> None:
        results.append(run_brain(home, "memory", "add", f"Concurrent fact number {i}"))

    threads = [threading.Thread(target=index), threading.Thread(target=index),
               threading.Thread(target=remember, args=(1,)),
               threading.Thread(target=remember, args=(2,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    for ran in results:
        _no_traceback(ran)
        if ran.code != 0:  # the only acceptable failure: a clear "busy, try again"
            assert "being updated by PID" in ran.err, ran.err
    run_brain(home, "index", str(notes)).ok()
    assert knowledge_state(home) == clean
    run_brain(home, "memory", "search", "fact").ok()
    memories = memory_state(home, model=EMBEDDING, dimension=DIMENSION)
    texts = [text for (_, _, text), _ in memories["memories"]]
    assert {"Concurrent fact number 1", "Concurrent fact number 2"} <= set(texts)
    assert not memories["duplicates"] and not memories["vectors_missing"]


def _mount_ns_usable() -> str | None:
    if shutil.which("unshare") is None:
        return "`unshare` is not installed"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -m failed: {probe.stderr.strip()}"


def _read_only(home: Path, *args: str) -> Ran:
    """`brain ARGS` with the data and cache dirs bind-mounted read-only (a private mount
    namespace: the test's own view stays writable)."""
    paths = resolve_paths(home)
    script = " && ".join(
        f'mount --bind "{d}" "{d}" && mount -o remount,bind,ro "{d}"'
        for d in (paths.data_dir, paths.cache_dir)
    ) + ' && exec "$@"'
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(BRAIN),
         "--home", str(home), *args],
        capture_output=True, text=True, timeout=120, env=brain_env(), cwd=home.parent,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def _digest(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.skipif(_mount_ns_usable() is not None, reason=f"{_mount_ns_usable()}")
def test_read_only_data_dir_gives_a_clear_error_and_writes_nothing(
    tmp_path: Path, fake_ollama: FakeOllamaServer
) -> None:
    home, notes = _populated(tmp_path, fake_ollama)
    (notes / "new.md").write_text("# New\n\nA note added while the disk is read-only.\n")
    paths = resolve_paths(home)
    before = _digest(paths.data_dir)
    for args in (("index", str(notes)), ("memory", "add", "I like rye bread"),
                 ("ask", "when do backups run?")):
        ran = _read_only(home, *args)
        _no_traceback(ran)
        assert ran.code != 0, (args, ran.out)
        assert "read-only" in ran.err.lower() or "readonly" in ran.err.lower(), (args, ran.err)
    assert _digest(paths.data_dir) == before, "a failed write changed the stores"
    # Writable again: everything works and nothing was lost.
    run_brain(home, "index", str(notes)).ok()
    assert any(f.endswith("new.md") for f in knowledge_state(home)["files"])


# ollama.timeout = 3 s between chunks, ollama.first_token_timeout = 4 s before the first one.
# script_chat's options for each misbehaviour, and what the error shown must say.
MISBEHAVIOURS: dict[str, tuple[dict[str, Any], str]] = {
    "slow": ({"delay": 8.0}, "did not start answering within 4 s"),
    "stalled": ({"chunk_delay": 8.0, "thinking": ""}, "nothing for 3 s"),
    "truncated": ({"disconnect_after": 2}, "connection"),
    "garbage json": ({"raw_body": b"{\"message\": {\"content\": \"hi\"\n<<garbage>>\n",
                      "content_type": "application/x-ndjson"}, ""),
    "http 500": ({"fail": 500, "error": "llama runner process has terminated"},
                 "llama runner process has terminated"),
    "wrong content type": ({"raw_body": b"<html><body>502 Bad Gateway</body></html>",
                            "content_type": "text/html"}, ""),
}


@pytest.mark.parametrize("kind", list(MISBEHAVIOURS))
def test_ask_survives_a_misbehaving_ollama(tmp_path: Path, fake_ollama: FakeOllamaServer,
                                           kind: str) -> None:
    home = tmp_path / "home"
    write_config(home, fake_ollama, embedding=EMBEDDING)
    (home / "config" / "config.toml").write_text(
        (home / "config" / "config.toml").read_text().replace(
            "timeout = 10.0", "timeout = 3.0\nfirst_token_timeout = 4.0"))
    options, expected = MISBEHAVIOURS[kind]
    fake_ollama.script_chat("Backups run at night. More text follows here.",
                            match=lambda body: not body.get("format"), **options)
    ran = run_brain(home, "ask", "when do backups run?", timeout=60)
    _no_traceback(ran)
    assert ran.code != 0, f"{kind}: a failed answer must not look like success\n{ran.out}"
    message = ran.err.strip()
    assert message, f"{kind}: nothing said about what happened"
    assert expected.lower() in message.lower(), message
    # The question is saved, and the next ask works as if nothing happened.
    sessions = run_brain(home, "sessions", "list").ok()
    assert "when do backups run" in sessions.out
    fake_ollama.script_chat("Backups run at night [1].", match=lambda body: not body.get("format"))
    again = run_brain(home, "ask", "--retry", "-c").ok()
    assert "Backups run at night [1]." in again.out
