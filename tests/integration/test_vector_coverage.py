"""KnowledgeBase.vector_coverage: the counts behind the "vectors missing" warning, cached until
this base syncs (counting per search would cost every query a Chroma round trip)."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.knowledge import note_text


def test_coverage_is_cached_and_refreshed_by_sync(knowledge, monkeypatch) -> None:
    kb = knowledge.open()
    assert kb.vector_coverage() == (0, 0)  # nothing indexed: nothing missing
    kb.add_folder(knowledge.notes)
    for i in range(3):
        knowledge.write(f"n{i}.md", note_text(f"note {i}", 3))
    kb.sync(knowledge.settings())
    vectors, chunks = kb.vector_coverage()
    assert chunks > 0 and vectors == chunks

    store = kb.vectors()
    store.delete(store.ids())  # the store emptied behind the base's back…
    for copy in Path(kb.vector_location).glob("dense-*.npz"):
        copy.unlink()  # …with its dense snapshot (else searches rightly keep using that)
    assert kb.vector_coverage() == (vectors, chunks)  # cached: no recount per search
    monkeypatch.setattr("indexing.knowledge.COVERAGE_TTL", 0.0)  # the cache expires
    assert kb.vector_coverage() == (0, chunks)

    monkeypatch.setattr("indexing.knowledge.COVERAGE_TTL", 3600.0)
    kb.sync(knowledge.settings())  # repairs the missing vectors and drops the cached counts
    assert kb.vector_coverage() == (chunks, chunks)
