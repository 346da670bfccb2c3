"""The sync against a real `chroma run` server (config `store.vector_store = "http://…"`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.knowledge import index_state, note_text
from tests.integration.test_chroma_server import ChromaServer


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    root = tmp_path_factory.mktemp("sync-chroma-server")
    running = ChromaServer(root / "db", root / "server.log").start()
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.slow
def test_sync_edit_remove_and_search_through_a_chroma_server(knowledge, server) -> None:
    from indexing.knowledge import KnowledgeBase

    kb = KnowledgeBase.open(knowledge.db, server.url, knowledge.embedder)
    try:
        kb.add_folder(knowledge.notes)
        for i in range(3):
            knowledge.write(f"n{i}.md", note_text(f"note {i}", 3))
        first = kb.sync(knowledge.settings())
        assert len(first.added) == 3
        index_state(kb).assert_consistent()

        edited = knowledge.notes / "n0.md"
        edited.write_text(edited.read_text().replace("note 0 part 1", "note 0 part one"))
        (knowledge.notes / "n1.md").unlink()
        report = kb.sync(knowledge.settings())
        assert report.updated == (str(edited),) and len(report.removed) == 1
        state = index_state(kb)
        state.assert_consistent()

        query = knowledge.embedder.embed_query("note 2 part 2")
        hits = kb.dense_search(query, 3, sources=[str(knowledge.notes / "n2.md")])
        assert hits and all(i in state.chunk_ids for i, _ in hits)
    finally:
        kb.close()
    # The data really lives in the server: a fresh client sees the same ids.
    import chromadb
    from chromadb.config import Settings

    client = chromadb.HttpClient(
        host="127.0.0.1", port=server.port, settings=Settings(anonymized_telemetry=False)
    )
    names = [c.name for c in client.list_collections()]
    [name] = [n for n in names if n.startswith("knowledge-")]
    stored = set(client.get_collection(name, embedding_function=None).get(include=[])["ids"])
    assert stored == state.chunk_ids
    assert Path(knowledge.db).exists()
