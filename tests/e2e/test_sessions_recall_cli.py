"""`brain sessions import|search|rm|forget-all|reindex` as a user runs them (installed entry point,
fake Ollama embeddings for speed, real Chroma and SQLite)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.e2e.conftest import run_brain, write_config
from tests.e2e.stores import conversation_vector_ids
from tests.fake_ollama import FakeOllamaServer

pytestmark = pytest.mark.timeout(300)

EMBEDDING = "ollama:nomic-embed-text"
DIMENSION = 768  # the fake's nomic-embed-text
EXPORT = Path(__file__).parent.parent / "data" / "chatgpt_conversations.json"


def line(session: str, role: str, text: str, when: str, **extra: str) -> str:
    return json.dumps({"session": session, "role": role, "text": text, "created_at": when}
                      | extra)


LINES = [
    line("trip", "user", "What did we decide about the kayak trip?", "2026-03-02T09:00:00Z",
         ref="k1", title="Kayak trip"),
    line("trip", "assistant", "Lake Tahoe in June, two rented kayaks.", "2026-03-02T09:00:05Z",
         ref="k2"),
    line("backup", "user", "Which rsync flags keep permissions?", "2026-03-10T10:00:00Z",
         ref="r1"),
    line("backup", "assistant", "rsync -a keeps permissions and times.", "2026-03-10T10:00:04Z",
         ref="r2"),
]


@pytest.fixture
def home(tmp_path: Path, fake_ollama: FakeOllamaServer, brain_bin: Path) -> Path:
    root = tmp_path / "home"
    write_config(root, fake_ollama, embedding=EMBEDDING)
    return root


def test_import_search_and_erase(home: Path, tmp_path: Path) -> None:
    source = tmp_path / "chats.jsonl"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    done = run_brain(home, "sessions", "import", str(source)).ok()
    assert "imported 2 turns in 2 sessions" in done.out
    again = run_brain(home, "sessions", "import", str(source))
    assert again.code == 1 and "already imported" in again.err and "--again" in again.err

    # (in the user's words: the fake's bag-of-words vectors are no model of meaning, and a hit
    # under the relevance floor is not listed)
    found = run_brain(home, "sessions", "search", "what did we decide about the kayak trip",
                      "--json").ok()
    data = json.loads(found.out)
    assert data["time_range"] is None
    assert data["hits"][0]["refs"] == ["k1", "k2"] and data["hits"][0]["title"] == "Kayak trip"

    dated = run_brain(home, "sessions", "search", "which rsync flags", "--since", "2026-03-05",
                      "--until", "2026-03-31", "--json").ok()
    data = json.loads(dated.out)
    assert data["time_range"]["origin"] == "flag"
    assert [h["refs"] for h in data["hits"]] == [["r1", "r2"]]

    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": "permissions"}) + "\n"
                       + json.dumps({"query": "kayak", "until": "2026-03-01"}) + "\n",
                       encoding="utf-8")
    batch = run_brain(home, "sessions", "search", "--queries", str(queries)).ok()
    first, second = (json.loads(x) for x in batch.out.splitlines())
    assert first["hits"][0]["refs"] == ["r1", "r2"] and second["hits"] == []

    human = run_brain(home, "sessions", "search", "what did we decide in March 2026").ok()
    assert "dates: 2026-03-01 → 2026-03-31 (in March 2026)" in human.err
    assert "Kayak trip" in human.out

    sessions = json.loads(run_brain(home, "sessions", "list", "--json").ok().out)["sessions"]
    trip = next(s["id"] for s in sessions if s["title"] == "Kayak trip")
    run_brain(home, "sessions", "rm", trip).ok()
    db = home / "data" / "sessions.sqlite3"
    with sqlite3.connect(db) as conn:
        terms = {r[0] for r in conn.execute("SELECT term FROM conversation_fts_vocab")}
    assert "kayak" not in terms and "rsync" in terms
    remaining = conversation_vector_ids(home, model=EMBEDDING, dimension=DIMENSION)
    with sqlite3.connect(db) as conn:
        units = sorted(r[0] for r in conn.execute("SELECT id FROM conversation_units"))
    assert remaining == units and len(units) == 1

    rebuilt = run_brain(home, "sessions", "reindex").ok()
    assert "indexed 1 unit" in rebuilt.out
    refused = run_brain(home, "sessions", "forget-all")
    assert refused.code == 1 and "--yes" in refused.err
    run_brain(home, "sessions", "forget-all", "--yes").ok()
    assert conversation_vector_ids(home, model=EMBEDDING, dimension=DIMENSION) == []
    assert b"rsync" not in db.read_bytes()


def test_chatgpt_export_and_bad_input(home: Path, tmp_path: Path) -> None:
    done = run_brain(home, "sessions", "import", str(EXPORT)).ok()
    assert "ChatGPT export: imported 4 turns in 2 sessions" in done.out
    found = json.loads(run_brain(home, "sessions", "search", "皮划艇", "--json").ok().out)
    assert found["hits"][0]["title"] == "皮划艇旅行计划"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(LINES[0] + "\n{oops\n", encoding="utf-8")
    partial = run_brain(home, "sessions", "import", str(bad))
    assert partial.code == 1 and "line 2: not valid JSON" in partial.err
    assert "imported 1 turn in 1 session" in partial.out

    stdin = run_brain(home, "sessions", "import", "-", stdin=LINES[2] + "\n" + LINES[3] + "\n")
    assert stdin.ok() and "imported 1 turn in 1 session" in stdin.out
    for args, message in [
        (("sessions", "search", "x", "--since", "soon"), "not a date"),
        (("sessions", "search"), "nothing to search for"),
        (("sessions", "import", str(tmp_path / "missing.jsonl")), "no such file"),
    ]:
        ran = run_brain(home, *args)
        assert ran.code == 1 and message in ran.err, ran
