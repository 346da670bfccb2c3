"""The dense snapshot: a cold `brain search` answers without importing Chroma, with the same
hits Chroma gives, and never from a copy that no longer matches the index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from indexing.dense_snapshot import META_KEY, load, snapshot_file
from indexing.knowledge_types import META_COLLECTION
from tests.fixtures.knowledge import note_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def kb(knowledge):
    base = knowledge.open()
    base.add_folder(knowledge.notes)
    for i in range(8):
        knowledge.write(f"n{i}.md", note_text(f"n{i}", 3, seed=i))
    base.sync(knowledge.settings())
    return base


def chroma_search(kb, query, k, sources=None):
    store = kb.vectors()
    where = {"source": {"$in": sorted(sources)}} if sources is not None else None
    return store.query(query, k, where=where)


def test_a_sync_writes_a_snapshot_that_answers_like_chroma(kb, knowledge) -> None:
    assert kb.searches_without_store
    path = snapshot_file(Path(kb.vector_location), kb.manifest.get_meta(META_COLLECTION))
    snapshot = load(path)
    assert snapshot is not None and snapshot.token == kb.manifest.get_meta(META_KEY)
    assert sorted(snapshot.ids) == sorted(kb.manifest.chunk_ids())
    for text in ("n3 section", "something else entirely", "n0"):
        query = knowledge.embedder.embed_query(text)
        ours = kb.dense_search(query, 5)
        theirs = chroma_search(kb, query, 5)
        # Exact search vs HNSW: the same scores rank by rank; equal scores may swap places.
        # The file stores float16: a unit row's score moves by at most 2**-11 (each component
        # by that share of itself, and sum |q_i x_i| <= 1); these hash vectors of a few large
        # components come near that bound, a real model's dense ones stay near 5e-5.
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=6e-4)
        cut = ours[-1][1] + 6e-4
        assert {i for i, s in ours if s > cut} == {i for i, s in theirs if s > cut}
    source = str(knowledge.notes / "n2.md")
    only = kb.dense_search(knowledge.embedder.embed_query("n2"), 50, sources=[source])
    assert only and {kb.get_chunks([i])[i].source for i, _ in only} == {source}
    assert kb.dense_search(knowledge.embedder.embed_query("n2"), 5, sources=["/nope"]) == []


def test_any_change_to_the_chunks_retires_the_snapshot_until_the_next_sync(
    kb, knowledge
) -> None:
    old_token = kb.manifest.get_meta(META_KEY)
    knowledge.write("n9.md", note_text("brand new note about zebras", 2, seed=9))

    class Stop(Exception):
        pass

    def stop_after_a_batch(event) -> None:
        if str(event.phase) == "done":  # the chunks are committed, the snapshot not rewritten
            raise Stop

    knowledge.write("n10.md", note_text("another new note", 2, seed=10))
    with pytest.raises(Stop):
        kb.sync(knowledge.settings(), progress=stop_after_a_batch)
    # Chunks changed and no new snapshot was written: searches go to Chroma, and find them.
    assert not kb.searches_without_store
    query = knowledge.embedder.embed_query("brand new note about zebras")
    assert [s for _, s in kb.dense_search(query, 3)] == pytest.approx(
        [s for _, s in chroma_search(kb, query, 3)], abs=1e-4)
    kb.sync(knowledge.settings())
    assert kb.searches_without_store
    assert kb.manifest.get_meta(META_KEY) not in (None, old_token)
    new_ids = set(kb.manifest.chunk_ids())
    snapshot = load(snapshot_file(Path(kb.vector_location),
                                  kb.manifest.get_meta(META_COLLECTION)))
    assert snapshot is not None and set(snapshot.ids) == new_ids
    # Removing a folder also rewrites it (empty now).
    kb.remove_folder(knowledge.notes)
    assert kb.searches_without_store
    assert kb.dense_search(query, 3) == []


def test_a_resync_without_changes_keeps_the_same_snapshot(kb, knowledge) -> None:
    token = kb.manifest.get_meta(META_KEY)
    report = kb.sync(knowledge.settings())
    assert not report.changed
    assert kb.manifest.get_meta(META_KEY) == token


def test_a_snapshot_that_does_not_match_is_never_used(kb, knowledge) -> None:
    path = snapshot_file(Path(kb.vector_location), kb.manifest.get_meta(META_COLLECTION))
    path.write_bytes(b"damaged")
    fresh = knowledge.open()  # another process: nothing cached
    assert not fresh.searches_without_store
    query = knowledge.embedder.embed_query("n1")
    assert fresh.dense_search(query, 3) == chroma_search(fresh, query, 3)  # it is Chroma


SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from assistant.context import AppContext
    from tests.fixtures.knowledge import make_embedder
    embedder = make_embedder(Path(sys.argv[1]))
    AppContext.embedder = lambda self: embedder
    from assistant.cli.main import main
    code = main(sys.argv[2:])
    print(json.dumps({"code": code, "chroma": "chromadb" in sys.modules,
                      "jieba": "jieba" in sys.modules, "torch": "torch" in sys.modules}),
          file=sys.stderr)
""")


def test_a_cold_brain_search_imports_neither_chroma_nor_jieba(home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(note_text(f"n{i}", 2, seed=i), encoding="utf-8")
    env = {**os.environ, "BRAIN_HOME": str(home), "PYTHONPATH": str(ROOT)}

    def brain(*argv: str) -> tuple[dict[str, object], str]:
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache"), *argv],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        return json.loads(done.stderr.strip().splitlines()[-1]), done.stdout

    assert brain("index", str(notes))[0]["code"] == 0
    result, out = brain("search", "n1", "--json")
    # Issue 15: neither Chroma, nor jieba for a query without CJK, nor torch.
    assert result == {"code": 0, "chroma": False, "jieba": False, "torch": False}
    assert json.loads(out)["hits"][0]["scores"]["vector"] is not None  # dense search ran


JIEBA = textwrap.dedent("""
    import sys
    from indexing.tokenize import query_tokens, tokenize
    tokenize("How do I rotate the logs? git-stash snake_case")
    query_tokens("rotate logs")
    english = "jieba" in sys.modules
    tokenize("如何压缩一个文件夹")
    print(english, "jieba" in sys.modules)
""")


def test_jieba_loads_only_for_text_with_cjk() -> None:
    done = subprocess.run([sys.executable, "-c", JIEBA], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_the_store_check_reruns_only_when_chroma_s_file_changes(
    kb, knowledge, monkeypatch: pytest.MonkeyPatch
) -> None:
    import indexing.vector_errors as vectors

    checks: list[Path] = []
    real = vectors.check_store_file

    def counted(directory):
        checks.append(Path(directory))
        real(directory)

    monkeypatch.setattr("indexing.knowledge_snapshot.check_store_file", counted)  # where used
    query = knowledge.embedder.embed_query("n3 section")
    first = kb.dense_search(query, 5)
    for _ in range(5):
        assert kb.dense_search(query, 5) == first
    assert len(checks) == 1  # a few ms per query saved: the file did not change
    db = Path(kb.vector_location) / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    data[:16] = b"not a database!!"  # damaged since: the next search must notice
    db.write_bytes(bytes(data))
    assert not kb.searches_without_store
    assert len(checks) == 2
