"""SIGKILL during a sync, at several points, then sync again: exactly the chunks of a clean run.

A worker process runs real syncs (SQLite manifest + FTS, embedded Chroma) with the fast
HashEmbedder. It prints a marker after every Chroma upsert, before every Chroma delete and after
every committed batch; the test kills it with SIGKILL right at chosen markers (the worker pauses
there so the kill lands in that window) or after a plain delay. A second sync in a new process
must then converge to the same state as a clean, uninterrupted run in another home: the same
chunk ids and texts in SQLite, the same ids in FTS and Chroma, no duplicates, no orphans.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.knowledge import note_text

ROOT = Path(__file__).resolve().parents[2]

WORKER = r"""
import hashlib, json, sys, time
from pathlib import Path

mode, db, vectors, folder, pause_at = sys.argv[1:6]

import indexing.vectors as vmod
from indexing.chunking import ChunkSettings
from indexing.knowledge import KnowledgeBase
from indexing.sync import SyncSettings
from tests.fakes import HashEmbedder

armed = mode == "once"
counts = {}

def mark(kind):
    if not armed:
        return
    counts[kind] = counts.get(kind, 0) + 1
    tag = f"{kind}:{counts[kind]}"
    print("MARK", tag, flush=True)
    if tag == pause_at:
        print("PAUSED", flush=True)
        time.sleep(120)

real_upsert, real_delete = vmod.VectorStore.upsert, vmod.VectorStore.delete

def upsert(self, *args, **kwargs):
    result = real_upsert(self, *args, **kwargs)
    mark("upsert")  # vectors written, the SQLite commit not yet done
    return result

def delete(self, *args, **kwargs):
    mark("delete")  # SQLite committed, obsolete vectors not yet deleted
    return real_delete(self, *args, **kwargs)

vmod.VectorStore.upsert, vmod.VectorStore.delete = upsert, delete

def progress(event):
    if str(event.phase) == "indexing" and event.files_done:
        mark("batch")  # a batch fully committed

settings = SyncSettings(
    chunking=ChunkSettings(chunk_size=300, chunk_overlap=50, min_chunk_chars=80), batch_chunks=16
)
kb = KnowledgeBase.open(Path(db), Path(vectors), HashEmbedder())
kb.add_folder(folder)
if mode == "two-phase":
    kb.sync(settings)
    print("READY", flush=True)
    sys.stdin.readline()
    armed = True
    print("GO", flush=True)
    kb.sync(settings, progress=progress)
elif mode == "once":
    print("GO", flush=True)
    kb.sync(settings, progress=progress)
else:
    kb.sync(settings)
    m = kb.manifest
    rows = m.conn.execute("SELECT id, text, source FROM chunks ORDER BY id").fetchall()
    fts_rows = m.conn.execute("SELECT count(*) FROM chunk_fts").fetchone()[0]
    store = kb.vectors()
    print("STATE " + json.dumps({
        "chunks": [r[0] for r in rows],
        "content": hashlib.sha256(json.dumps(rows).encode()).hexdigest(),
        "files": sorted(m.files()),
        "file_chunk_ids": sorted(i for r in m.files().values() for i in r.chunk_ids),
        "fts": sorted(m.keywords.ids()),
        "fts_rows": fts_rows,
        "vectors": sorted(store.ids()),
        "vector_count": store.count(),
    }), flush=True)
print("DONE", flush=True)
"""

N_FILES = 120


def write_state(folder: Path, state: int) -> None:
    """State 0: N_FILES notes. State 1: a third edited, every 7th deleted, 30 new."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for i in range(N_FILES):
        if state == 1 and i % 7 == 0:
            continue
        seed = 1 if state == 1 and i % 3 == 0 else 0
        sub = folder / f"d{i % 6}"
        sub.mkdir(exist_ok=True)
        (sub / f"note{i}.md").write_text(note_text(f"note {i}", 2, seed=seed, words=40))
    if state == 1:
        for i in range(30):
            (folder / f"new{i}.md").write_text(note_text(f"new {i}", 2, words=40))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}


def _cmd(mode: str, home: Path, folder: Path, pause_at: str = "-") -> list[str]:
    return [
        sys.executable, "-c", WORKER, mode,
        str(home / "knowledge.sqlite3"), str(home / "chroma"), str(folder), pause_at,
    ]


def final_state(home: Path, folder: Path) -> dict:
    done = subprocess.run(
        _cmd("final", home, folder), cwd=ROOT, env=_env(), capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("STATE "))
    return json.loads(line[len("STATE "):])


def _read_until(proc: subprocess.Popen[str], wanted: str, timeout: float = 60) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"worker ended before {wanted!r}: {seen[-5:]} {err[-2000:]}")
        seen.append(line.strip())
        if line.strip() == wanted:
            return seen
    raise AssertionError(f"timed out waiting for {wanted!r}")


def run_and_kill(home: Path, folder: Path, mode: str, pause_at: str, delay: float) -> list[str]:
    """Start a worker, let it reach the kill point, SIGKILL it. Returns the markers seen."""
    proc = subprocess.Popen(
        _cmd(mode, home, folder, pause_at), cwd=ROOT, env=_env(), text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        if mode == "two-phase":
            _read_until(proc, "READY")
            write_state(folder, 1)  # the killed sync applies an incremental change
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        seen = _read_until(proc, "GO")
        if pause_at != "-":
            seen += _read_until(proc, "PAUSED")
        else:
            time.sleep(delay)  # a plain, unsynchronised point in the middle of the work
        assert proc.poll() is None, "the worker finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()
    return seen


CASES = [
    # (mode, pause_at, delay): where the SIGKILL lands
    ("once", "upsert:3", 0.0),  # first index: vectors written, SQLite not committed
    ("two-phase", "upsert:1", 0.0),  # incremental: new vectors written, commit pending
    ("two-phase", "delete:2", 0.0),  # incremental: committed, obsolete vectors still there
    ("once", "-", 0.3),  # first index: wherever it is after 0.3 s (between batches, mostly)
]


@pytest.mark.slow
def test_sigkill_at_any_point_converges_to_the_clean_state(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    write_state(folder, 1)
    clean = final_state(tmp_path / "clean-home", folder)
    assert len(clean["files"]) == N_FILES - len(range(0, N_FILES, 7)) + 30
    assert clean["chunks"] == clean["fts"] == clean["vectors"] == clean["file_chunk_ids"]
    assert clean["fts_rows"] == clean["vector_count"] == len(clean["chunks"]) > N_FILES

    for n, (mode, pause_at, delay) in enumerate(CASES):
        home = tmp_path / f"home-{n}"
        write_state(folder, 0)
        seen = run_and_kill(home, folder, mode, pause_at, delay)
        if mode == "once":
            write_state(folder, 1)  # the next sync also applies the change on top of the crash
        state = final_state(home, folder)
        where = f"case {n} ({mode}, {pause_at}, {delay}s; last markers {seen[-3:]})"
        assert state == clean, f"did not converge after a kill at {where}"
