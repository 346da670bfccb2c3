"""Issue 15: databases written before PDF page ranges (`end_page`) open, migrate in place and keep
every row; their old chunks and cited sources read as single pages, new ones keep ranges."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from assistant.sessions import schema as sessions_db
from assistant.sessions.store import SessionStore
from assistant.sessions.turn import KnowledgeItem, Source
from indexing import manifest as manifest_db
from indexing.manifest import Manifest
from indexing.types import Chunk


def _old_database(path: Path, migrations: tuple[str, ...], upto: int) -> sqlite3.Connection:
    """A database as a release with only the first `upto` migrations wrote it."""
    conn = sqlite3.connect(path)
    for step in migrations[:upto]:
        conn.executescript(step)
    conn.execute(f"PRAGMA user_version = {upto}")
    return conn


def test_a_manifest_from_before_page_ranges_migrates(tmp_path: Path) -> None:
    db = tmp_path / "manifest.sqlite3"
    before = manifest_db.MIGRATIONS.index(
        next(m for m in manifest_db.MIGRATIONS if "end_page" in m))
    conn = _old_database(db, manifest_db.MIGRATIONS, before)
    assert "end_page" not in {r[1] for r in conn.execute("PRAGMA table_info(chunks)")}
    conn.execute(
        "INSERT INTO chunks (id, source, root, heading, idx, start_char, end_char, start_line, "
        "end_line, page, mtime, content_hash, language, text) "
        "VALUES ('old', '/docs/paper.pdf', '/docs', 'Methods', 0, 0, 40, 1, 3, 2, 1.0, 'h', "
        "'en', 'The method runs over two pages.')")
    conn.commit()
    conn.close()

    manifest = Manifest.open(db)
    try:
        assert manifest.schema_version() == manifest_db.SCHEMA_VERSION
        old = manifest.get_chunks(["old"])["old"]
        assert (old.page, old.end_page, old.last_page, old.page_label) == (2, None, 2, "page 2")
        assert old.text == "The method runs over two pages."
        new = Chunk("new", "Spans a page break.", "/docs/paper.pdf", "/docs", "Results", 1, 40,
                    80, 3, 5, 2, 1.0, "h2", "en", end_page=3)
        manifest.put_chunks([new])
        assert manifest.get_chunks(["new"])["new"].page_label == "pages 2–3"
    finally:
        manifest.close()
    reopened = Manifest.open(db)  # migrated once: opening again changes nothing
    try:
        assert reopened.schema_version() == manifest_db.SCHEMA_VERSION
        assert set(reopened.get_chunks(["old", "new"])) == {"old", "new"}
    finally:
        reopened.close()


def test_a_sessions_database_from_before_page_ranges_migrates(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    before = sessions_db.MIGRATIONS.index(
        next(m for m in sessions_db.MIGRATIONS if "end_page" in m))
    conn = _old_database(db, sessions_db.MIGRATIONS, before)
    conn.execute("INSERT INTO sessions (id, title, created_at, updated_at) "
                 "VALUES ('s1', 'papers', 1.0, 1.0)")
    conn.execute("INSERT INTO turns (session_id, seq, question, answer, status, created_at) "
                 "VALUES ('s1', 1, 'what method?', 'Two passes [1].', 'complete', 1.0)")
    conn.execute("INSERT INTO turn_sources (turn_id, n, cited, chunk_id, source, relpath, "
                 "heading, page, text) VALUES (1, 1, 1, 'old', '/docs/paper.pdf', 'paper.pdf', "
                 "'Methods', 2, 'The method runs over two pages.')")
    conn.commit()
    conn.close()

    store = SessionStore.open(db)
    try:
        (turn,) = store.turns("s1")
        (source,) = turn.sources
        assert (source.item.page, source.item.end_page) == (2, None)
        assert source.item.location == "paper.pdf p. 2"
        item = KnowledgeItem(chunk_id="new", text="Spans a page break.", source="/docs/paper.pdf",
                             relpath="paper.pdf", heading="Results", score=0.5, page=2,
                             end_page=3)
        later = store.add_turn("s1", "and the results?", "See [1].", status="complete",
                               sources=[Source(1, item, cited=True)])
        assert later.sources[0].item.location == "paper.pdf p. 2–3"
    finally:
        store.close()
