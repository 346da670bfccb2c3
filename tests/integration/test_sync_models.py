"""Embedding-model changes and `--rebuild`: fresh collections, the cache, no dimension crash."""

from __future__ import annotations

import pytest

from indexing.knowledge_types import ReembedNeeded, collection_name
from tests.fixtures.knowledge import index_state, inner_calls, make_embedder, note_text


def _fill(knowledge, n: int = 4) -> None:
    for i in range(n):
        knowledge.write(f"n{i}.md", note_text(f"note {i}", 3))


def test_model_change_is_detected_and_resync_reembeds_into_a_fresh_collection(knowledge) -> None:
    _fill(knowledge)
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    kb.sync(knowledge.settings())
    old_ids = index_state(kb).chunk_ids
    old_collection = collection_name(knowledge.embedder.model_id, 64)
    kb.close()

    other = make_embedder(knowledge.cache, dimension=32, model_id="test:hash-32")
    kb2 = knowledge.open(embedder=other)
    assert kb2.reembed_needed
    assert kb2.indexed_model == "test:hash-64"
    # Searching with the new model's 32-d vector must be a clear error, not a Chroma crash.
    with pytest.raises(ReembedNeeded, match="brain index --sync"):
        kb2.dense_search(other.embed_query("alpha"), 5)
    # Keyword search does not depend on the model and keeps working meanwhile.
    assert kb2.keyword_search("alpha bravo", 3)

    report = kb2.sync(knowledge.settings())
    assert report.reembedded
    assert report.repaired == len(old_ids)  # every chunk got a vector of the new model
    assert not kb2.reembed_needed
    assert kb2.indexed_model == "test:hash-32"
    state = index_state(kb2)
    state.assert_consistent()
    assert state.chunk_ids == old_ids  # same chunks, new vectors
    hits = kb2.dense_search(other.embed_query("alpha bravo"), 3)
    assert hits and all(-1.0 <= s <= 1.0001 for _, s in hits)
    assert {f.model_id for f in kb2.manifest.files().values()} == {"test:hash-32"}
    # The old collection is gone.
    from indexing.vectors import VectorStore

    fresh = VectorStore.open(knowledge.vectors, old_collection, model_id="test:hash-64",
                             dimension=64)
    assert fresh.count() == 0

    # Switching back re-uses the cached embeddings of the first model: no model calls.
    first = make_embedder(knowledge.cache)
    kb3 = knowledge.open(embedder=first)
    assert kb3.reembed_needed
    report = kb3.sync(knowledge.settings())
    assert report.reembedded and report.embedded == 0
    assert inner_calls(first) == 0
    index_state(kb3).assert_consistent()


def test_rebuild_with_a_warm_cache_makes_no_model_calls(knowledge) -> None:
    _fill(knowledge, 5)
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    first = kb.sync(knowledge.settings())
    before = index_state(kb)
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings(), rebuild=True)
    assert report.rebuilt
    assert len(report.added) == 5
    assert report.chunks_added == first.chunks_added
    assert report.embedded == 0
    assert inner_calls(knowledge.embedder) == calls
    after = index_state(kb)
    after.assert_consistent()
    assert after.chunk_ids == before.chunk_ids


def test_rebuild_restores_lost_vectors_from_the_cache_and_drops_strays(knowledge) -> None:
    _fill(knowledge, 4)
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    kb.sync(knowledge.settings())
    before = index_state(kb)
    store = kb.vectors()
    lost = sorted(before.chunk_ids)[:3]
    store.delete(lost)
    store.upsert(["stray"], knowledge.embedder.embed_documents(["stray"]), [{"source": "/x"}])
    # The SQLite side is gone too: the rebuild must re-derive everything from the files.
    with kb.manifest.transaction():
        kb.manifest.conn.execute("DELETE FROM chunks WHERE id = ?", (lost[0],))
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings(), rebuild=True)
    assert report.embedded == 0 and report.cache_hits == 3
    assert inner_calls(knowledge.embedder) == calls
    after = index_state(kb)
    after.assert_consistent()
    assert after.chunk_ids == before.chunk_ids


def test_new_index_adopts_the_configured_model(knowledge) -> None:
    kb = knowledge.open()
    assert not kb.reembed_needed and kb.indexed_model is None
    kb.add_folder(knowledge.notes)
    report = kb.sync(knowledge.settings())
    assert not report.reembedded
    assert kb.indexed_model == knowledge.embedder.model_id


def test_manifest_schema_is_versioned(knowledge) -> None:
    from indexing.manifest import SCHEMA_VERSION, Manifest, ManifestError

    kb = knowledge.open()
    assert kb.manifest.schema_version() == SCHEMA_VERSION
    assert kb.manifest.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    kb.manifest.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    kb.close()
    with pytest.raises(ManifestError, match="newer than this second-brain"):
        Manifest.open(knowledge.db)


def test_a_manifest_from_before_user_version_is_adopted_with_its_data(knowledge) -> None:
    """Manifests written before the shared migration runner kept their version in a
    `schema_migrations` table: they open as that version, with every row kept."""
    import sqlite3

    from indexing.manifest import SCHEMA_VERSION, Manifest

    knowledge.write("git.md", "# Stash\n\nSave work in progress with git stash.\n")
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    kb.sync(knowledge.settings())
    chunks = kb.stats()[1]
    kb.close()
    conn = sqlite3.connect(knowledge.db)
    # A file of that era is schema 1: without the columns later migrations add.
    conn.execute("ALTER TABLE chunks DROP COLUMN end_page")
    conn.execute("PRAGMA user_version = 0")
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at REAL)")
    conn.execute("INSERT INTO schema_migrations VALUES (1, 0)")
    conn.commit()
    conn.close()
    manifest = Manifest.open(knowledge.db)
    try:
        assert manifest.schema_version() == SCHEMA_VERSION
        assert manifest.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == chunks > 0
        assert not manifest.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'"
        ).fetchone()
    finally:
        manifest.close()
