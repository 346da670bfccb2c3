"""The dense snapshot holds the current model's vectors by content, so the embedding cache keeps
no third copy of them (issue 25), and a home from before that is migrated by its next sync,
even one SIGKILLed midway."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from indexing.dense_snapshot import load, snapshot_file
from indexing.knowledge_types import META_COLLECTION
from indexing.manifest import CACHE_TRIM_META, SCHEMA_VERSION
from tests.fixtures.knowledge import index_state, inner_calls, note_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kb(knowledge):
    base = knowledge.open()
    base.add_folder(knowledge.notes)
    for i in range(6):
        knowledge.write(f"n{i}.md", note_text(f"n{i}", 3, seed=i))
    base.sync(knowledge.settings())
    return base


def _snapshot_path(kb) -> Path:
    return snapshot_file(Path(kb.vector_location), kb.manifest.get_meta(META_COLLECTION))


def _cache_keys(knowledge) -> set[str]:
    import diskcache

    cache = diskcache.Cache(str(knowledge.embedder.cache_dir))
    try:
        return {k for k in cache.iterkeys() if isinstance(k, str) and not k.startswith("meta:")}
    finally:
        cache.close()


def _chunk_hashes(kb) -> set[str]:
    return set(kb.manifest.chunk_hashes().values())


def test_after_a_sync_the_cache_holds_no_vector_the_snapshot_holds(kb, knowledge) -> None:
    snapshot = load(_snapshot_path(kb))
    assert snapshot is not None and snapshot.content_keys() == _chunk_hashes(kb)
    assert not _cache_keys(knowledge) & _chunk_hashes(kb)
    assert kb.manifest.get_meta(CACHE_TRIM_META) is None
    # A moved file and an edit that shifts every later chunk still embed nothing twice.
    calls = inner_calls(knowledge.embedder)
    (knowledge.notes / "n1.md").rename(knowledge.notes / "moved.md")
    shifted = knowledge.notes / "n2.md"
    shifted.write_text(note_text("new first", 1, seed=99) + shifted.read_text(), "utf-8")
    report = kb.sync(knowledge.settings())
    assert report.chunks_added > 0
    new_texts = inner_calls(knowledge.embedder) - calls
    assert report.embedded == new_texts and report.embedded < report.chunks_added
    assert report.cache_hits == report.chunks_added - report.embedded
    assert not _cache_keys(knowledge) & _chunk_hashes(kb)
    index_state(kb).assert_consistent()


def _make_old_format(knowledge, kb) -> dict[str, np.ndarray]:
    """The home as the release before wrote it: a snapshot without content hashes, every
    knowledge vector also in the embedding cache, schema 2 without the trim record."""
    import diskcache

    path = _snapshot_path(kb)
    snapshot = load(path)
    assert snapshot is not None
    hashes = kb.manifest.chunk_hashes()
    vectors = snapshot.by_content(sorted(set(hashes.values())))
    np.savez(path.open("wb"), token=np.array(snapshot.token),
             collection=np.array(snapshot.collection), ids=np.array(snapshot.ids, dtype=str),
             vectors=snapshot.matrix)
    cache = diskcache.Cache(str(knowledge.embedder.cache_dir))
    with cache.transact():
        for key, vector in vectors.items():
            cache.set(key, np.asarray(vector, dtype=np.float32).tobytes())
    cache.close()
    with kb.manifest.transaction():
        kb.manifest.set_meta(CACHE_TRIM_META, None)
    kb.manifest.conn.execute("PRAGMA user_version = 2")
    kb.close()
    return vectors


def test_an_old_home_is_migrated_by_its_next_sync(kb, knowledge) -> None:
    query = knowledge.embedder.embed_query("n3 section")
    before = kb.dense_search(query, 5)
    hashes = set(_make_old_format(knowledge, kb))
    assert hashes == _chunk_hashes(knowledge.open()) and hashes <= _cache_keys(knowledge)
    kb2 = knowledge.open()
    assert kb2.manifest.schema_version() == SCHEMA_VERSION
    assert kb2.manifest.get_meta(CACHE_TRIM_META) == "due"
    assert kb2.searches_without_store  # the old file keeps serving until the sync
    assert kb2.dense_search(query, 5) == before
    calls = inner_calls(knowledge.embedder)
    report = kb2.sync(knowledge.settings())
    assert report.embedded == 0 and inner_calls(knowledge.embedder) == calls
    snapshot = load(_snapshot_path(kb2))
    assert snapshot is not None and snapshot.content_keys() == _chunk_hashes(kb2)
    assert not _cache_keys(knowledge) & _chunk_hashes(kb2)
    assert kb2.manifest.get_meta(CACHE_TRIM_META) is None
    assert kb2.searches_without_store
    assert [i for i, _ in kb2.dense_search(query, 5)] == [i for i, _ in before]


# The child syncs the old home and SIGKILLs itself at one point of the migration.
_CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    base, notes, point = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
    import indexing.dense_snapshot as dense, indexing.embedding_cache as cache_mod
    from indexing.knowledge import KnowledgeBase
    from tests.fixtures.knowledge import KnowledgeHarness, make_embedder

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    if point == "after the file, before its token":
        real = dense.write
        def write(*args, **kwargs):
            real(*args, **kwargs)
            die()
        dense.write = write
    else:  # after the trim's first batch committed
        cache_mod._DROP_BATCH = 2
        real_drop = cache_mod.drop_keys
        def drop_keys(cache, keys):
            real_transact = cache.transact
            count = [0]
            def transact(*a, **k):
                count[0] += 1
                if count[0] == 2:
                    die()
                return real_transact(*a, **k)
            cache.transact = transact
            return real_drop(cache, keys)
        import indexing.embedder as emb
        emb.drop_keys = drop_keys
    harness = KnowledgeHarness(base=base, notes=notes,
                               embedder=make_embedder(base / "cache" / "embeddings"))
    kb = harness.open()
    kb.sync(harness.settings())
    print("not killed")
""")


@pytest.mark.parametrize("point", ["after the file, before its token",
                                   "after the first batch of the trim"])
def test_a_kill_during_the_migration_is_finished_by_the_next_sync(kb, knowledge, point) -> None:
    query = knowledge.embedder.embed_query("n3 section")
    before = [i for i, _ in kb.dense_search(query, 5)]
    _make_old_format(knowledge, kb)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ROOT), str(knowledge.base), str(knowledge.notes),
         point],
        capture_output=True, text=True, timeout=120, env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert child.returncode == -9, child.stdout + child.stderr
    kb2 = knowledge.open()
    assert kb2.manifest.get_meta(CACHE_TRIM_META) == "due"
    if point.startswith("after the first batch"):
        left = _cache_keys(knowledge) & _chunk_hashes(kb2)
        assert left and left < _chunk_hashes(kb2)  # killed midway: some entries gone
    calls = inner_calls(knowledge.embedder)
    report = kb2.sync(knowledge.settings())
    assert report.embedded == 0 and inner_calls(knowledge.embedder) == calls
    assert not _cache_keys(knowledge) & _chunk_hashes(kb2)
    assert kb2.manifest.get_meta(CACHE_TRIM_META) is None
    snapshot = load(_snapshot_path(kb2))
    assert snapshot is not None and snapshot.content_keys() == _chunk_hashes(kb2)
    assert kb2.searches_without_store
    assert [i for i, _ in kb2.dense_search(query, 5)] == before
    index_state(kb2).assert_consistent()


def test_a_store_moved_aside_is_rebuilt_from_its_snapshot_without_the_model(kb, knowledge
                                                                             ) -> None:
    """README's recovery: `chroma/` moved aside, its `dense-*.npz` copied into a new one, then
    `--rebuild`: the knowledge vectors come from that file (the cache no longer holds them)."""
    import shutil

    before = index_state(kb)
    snapshot = _snapshot_path(kb)
    kb.close()
    from indexing.chroma_clients import refresh_location

    refresh_location(knowledge.vectors)  # as a new process would: no client of the old files
    aside = knowledge.vectors.with_name("chroma.aside")
    knowledge.vectors.rename(aside)
    knowledge.vectors.mkdir()
    shutil.copy2(aside / snapshot.name, knowledge.vectors / snapshot.name)
    kb2 = knowledge.open()
    calls = inner_calls(knowledge.embedder)
    report = kb2.sync(knowledge.settings(), rebuild=True)
    assert report.embedded == 0 and inner_calls(knowledge.embedder) == calls
    assert report.reused == 0 and report.cache_hits == len(before.chunk_ids)
    after = index_state(kb2)
    after.assert_consistent()
    assert after.chunk_ids == before.chunk_ids


def test_a_removed_text_leaves_no_row_in_any_model_s_snapshot(kb, knowledge) -> None:
    """The first model's file stays for a switch back; a removal erases its rows too."""
    from indexing.dense_snapshot import erase_content
    from tests.fixtures.knowledge import make_embedder

    first = _snapshot_path(kb)
    gone = {c.content_hash for c in kb.get_chunks(kb.manifest.chunk_ids()).values()
            if c.source.endswith("n0.md")}
    other = knowledge.open(embedder=make_embedder(knowledge.cache, dimension=32,
                                                  model_id="test:hash-32"))
    other.sync(knowledge.settings())
    second = _snapshot_path(other)
    assert first != second and first.is_file()
    token = other.manifest.get_meta("dense_snapshot")
    assert erase_content(knowledge.vectors, gone) == 2 * len(gone)
    for path in (first, second):
        snapshot = load(path)
        assert snapshot is not None and not snapshot.content_keys() & gone
        assert snapshot.content_keys()
    current = load(second)
    assert current is not None and current.token == token and other.searches_without_store
    assert erase_content(knowledge.vectors, gone) == 0  # done: nothing rewritten again


def test_the_snapshots_are_one_of_the_erasers_of_a_removal() -> None:
    from assistant.erasure.traces import registered

    assert "dense snapshots" in registered()


def test_a_model_switch_writes_the_new_model_s_snapshot_and_trims_its_cache(kb, knowledge
                                                                            ) -> None:
    from tests.fixtures.knowledge import make_embedder

    other = knowledge.open(embedder=make_embedder(knowledge.cache, dimension=32,
                                                  model_id="test:hash-32"))
    assert other.sync(knowledge.settings()).reembedded
    assert other.searches_without_store
    snapshot = load(_snapshot_path(other))
    assert snapshot is not None and snapshot.content_keys() == _chunk_hashes(other)
    assert other.manifest.get_meta(CACHE_TRIM_META) is None
