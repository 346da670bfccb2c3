"""Sessions in SQLite: persistence, migrations, resolve/rename/delete, Markdown export."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import pytest

from assistant.chat.export import session_markdown
from assistant.errors import UserError
from assistant.sessions.schema import SCHEMA_VERSION
from assistant.sessions.store import SessionNotFound, SessionStore
from assistant.sessions.turn import MemoryItem, Source, ToolUse, Turn
from tests.fixtures.chat import knowledge_item, memory_item


class TurnFields(TypedDict, total=False):
    """The optional fields of `SessionStore.add_turn` these tests set."""

    model: str
    error: str
    low_confidence: bool
    sources: Sequence[Source]
    memories: Sequence[MemoryItem]
    tools: Sequence[ToolUse]
    timings: dict[str, float] | None
    log_id: int | None
    truncated: bool


def add_exchange(store: SessionStore, sid: str, question: str, answer: str, *,
                 status: str = "complete", **kw: Unpack[TurnFields]) -> Turn:
    return store.add_turn(sid, question, answer, status=status, **kw)


def test_turns_with_sources_and_memories_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    store = SessionStore.open(path)
    session = store.create(model="qwen3:4b")
    sources = [Source(1, knowledge_item(1), cited=True), Source(2, knowledge_item(2))]
    turn = add_exchange(
        store, session.id, "How do I stash?", "Use git stash [1].",
        sources=sources, memories=[memory_item(1)], timings={"total_ms": 12.5},
        tools=[ToolUse("search_knowledge", {"query": "stash", "top_k": 2}, "2 excerpts")],
        low_confidence=True,
    )
    store.close()

    reopened = SessionStore.open(path)
    [loaded] = reopened.turns(session.id)
    assert loaded == turn
    assert loaded.citations == (sources[0],)
    assert loaded.memories[0].text == memory_item(1).text
    assert loaded.timings == {"total_ms": 12.5}
    assert loaded.tools[0].arguments == {"query": "stash", "top_k": 2}
    assert loaded.low_confidence
    got = reopened.get(session.id)
    assert got.title == "How do I stash?" and got.turn_count == 1 and got.model == "qwen3:4b"
    assert (path.stat().st_mode & 0o777) == 0o600
    reopened.close()


def test_turns_are_numbered_per_session_and_listed_newest_session_first(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s.db")
    a = store.create()
    b = store.create()
    add_exchange(store, a.id, "one", "1")
    add_exchange(store, b.id, "other", "x")
    add_exchange(store, a.id, "two", "2", status="interrupted")
    assert [t.seq for t in store.turns(a.id)] == [1, 2]
    assert [t.question for t in store.turns(a.id, after_seq=1)] == ["two"]
    assert store.list()[0].id == a.id  # most recently active first
    latest = store.latest()
    assert latest is not None and latest.id == a.id


def test_resolve_by_unique_prefix(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s.db")
    session = store.create()
    assert store.resolve(session.id[:3]).id == session.id
    with pytest.raises(SessionNotFound):
        store.resolve("zzzzzzzzz")
    with pytest.raises(SessionNotFound):
        store.resolve("%")  # LIKE wildcards are literal


def test_ambiguous_prefix_is_an_error(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s.db")
    ids = {store.create().id for _ in range(40)}
    shared = next(
        (i[:1] for i in ids if sum(j.startswith(i[:1]) for j in ids) > 1), None
    )
    assert shared is not None  # 40 ids over 16 first characters must share one
    with pytest.raises(UserError, match="matches"):
        store.resolve(shared)


def test_rename_delete_and_summary(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s.db")
    session = store.create()
    add_exchange(store, session.id, "q", "a")
    assert store.rename(session.id, "  My   git notes ").title == "My git notes"
    with pytest.raises(UserError):
        store.rename(session.id, "   ")
    store.set_summary(session.id, "summary v2", 2)
    store.set_summary(session.id, "stale", 1)  # an older fold finishing late never wins
    assert store.get(session.id).summary == "summary v2"
    store.delete(session.id)
    with pytest.raises(SessionNotFound):
        store.get(session.id)
    with pytest.raises(SessionNotFound):
        store.delete(session.id)
    assert store.turns(session.id) == []  # cascaded


def test_adding_to_a_missing_session_fails_clearly(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s.db")
    with pytest.raises(SessionNotFound):
        add_exchange(store, "nope", "q", "a")


def test_migrates_an_empty_database_and_refuses_a_newer_one(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    blank = sqlite3.connect(path)  # version 0: a database file from before any schema
    blank.execute("PRAGMA journal_mode = WAL")  # writes the header page
    blank.close()
    store = SessionStore.open(path)
    store.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="newer than this second-brain"):
        SessionStore.open(path)


def test_a_corrupt_file_is_a_user_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(UserError, match="cannot open the sessions database"):
        SessionStore.open(path)


def test_markdown_export_has_turns_citations_and_sources(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path / "s.db")
    session = store.create(model="qwen3:4b")
    add_exchange(
        store, session.id, "How do I stash?", "Use `git stash` [1].",
        sources=[
            Source(1, knowledge_item(1, heading="git stash > Push", relpath="tldr/git-stash.md"),
                   cited=True),
            Source(2, knowledge_item(2, relpath="tldr/other.md")),
        ],
        model="qwen3:4b",
    )
    add_exchange(store, session.id, "And pop?", "It re", status="interrupted")
    add_exchange(store, session.id, "Everything?", "First", truncated=True)
    add_exchange(store, session.id, "Hello?", "", status="failed",
                 error="Ollama is not running at http://localhost:11434")
    md = session_markdown(store.get(session.id), store.turns(session.id))
    assert md.startswith("# How do I stash?\n")
    assert f"- Session: `{session.id}`" in md
    assert "## 1. How do I stash?" in md
    assert "> How do I stash?" in md
    assert "Use `git stash` [1]." in md
    assert "[1] `tldr/git-stash.md:10-15` — git stash > Push" in md
    assert "/home/user/tldr/git-stash.md" in md
    assert "tldr/other.md" not in md  # not cited
    assert "*(answer interrupted)*" in md
    assert "First\n\n*(answer cut off at the model's length limit)*" in md
    assert md.count("cut off") == 1
    assert "*(no answer: Ollama is not running at http://localhost:11434)*" in md
    everything = session_markdown(store.get(session.id), store.turns(session.id),
                                  all_sources=True)
    assert "tldr/other.md" in everything


def test_upgrade_from_version_1_keeps_the_data(tmp_path: Path) -> None:
    from assistant.sessions.schema import MIGRATIONS

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0] + "\nPRAGMA user_version = 1;")
    conn.execute("INSERT INTO sessions (id, title, created_at, updated_at) "
                 "VALUES ('abcd1234', 'old', 1, 2)")
    conn.execute("INSERT INTO turns (session_id, seq, question, answer, status, created_at) "
                 "VALUES ('abcd1234', 1, 'q', 'a', 'complete', 1)")
    conn.commit()
    conn.close()
    store = SessionStore.open(path)
    [turn] = store.turns("abcd1234")
    assert (turn.question, turn.answer, turn.log_id) == ("q", "a", None)
    assert store.get("abcd1234").title == "old"
    added = add_exchange(store, "abcd1234", "q2", "a2", log_id=7)
    assert store.turn(added.id).log_id == 7
    assert not turn.truncated  # v4: turns from before default to not cut off
    cut = add_exchange(store, "abcd1234", "q3", "a3", truncated=True)
    store.close()
    assert SessionStore.open(path).turn(cut.id).truncated is True
