"""`brain memory import` stopped at any point and run again ends exactly like one clean import;
a repeated import is refused instead of doubling; nothing is ever skipped for matching an existing
memory (issue 5: no dedup unless asked). The in-process twin of the SIGKILL test in
test_faults.py: every failure point is hit deterministically, in well under a second each.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.memory.import_runs import ImportRun
from assistant.memory.model import NewMemory
from assistant.memory.store import AlreadyImported, MemoryStore
from assistant.memory.transfer import import_memories
from tests.fakes import HashEmbedder
from tests.fixtures.memory import FakeClock, MemoryVectors

BATCH = 8


def _lines() -> list[str]:
    rows: list[dict[str, Any]] = [
        {"text": f"The user owns plant number {i}.", "type": "fact"} for i in range(40)]
    rows.append({"text": "Said twice.", "type": "fact"})
    rows.append({"text": "Said twice.", "type": "fact"})
    rows.append({"text": "Dated.", "created_at": "2024-01-02T03:04:05Z", "source": "D1:1"})
    rows.append({"text": "Dated.", "created_at": "2024-05-06T07:08:09Z", "source": "D1:1"})
    return [json.dumps(r) for r in rows]


def _state(store: MemoryStore, vectors: MemoryVectors) -> dict[str, Any]:
    active = store.list()
    return {
        "memories": sorted(Counter((m.type.value, m.key, m.text, m.source, m.created_at)
                                   for m in active).items()),
        "missing_vectors": sorted({m.id for m in active} - set(vectors.data)),
        "orphan_vectors": sorted(set(vectors.data) - {m.id for m in active}),
        "runs": [(r.total, r.committed, r.added, r.finished) for r in store.import_runs()],
    }


@pytest.fixture
def clean_state(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The state after one uninterrupted import, in another store."""
    vectors = MemoryVectors()
    store = MemoryStore(tmp_path / "clean.sqlite3", embedder=lambda: HashEmbedder(dimension=128),
                        vectors=lambda: vectors, clock=FakeClock())
    try:
        import_memories(store, _lines(), batch_size=BATCH)
        yield _state(store, vectors)
    finally:
        store.close()


class Killed(BaseException):
    """Stands in for SIGKILL: nothing after it runs (BaseException passes `except Exception`)."""


def _kill_at(store: MemoryStore, vectors: MemoryVectors, point: str, batch: int) -> None:
    """Arrange for the `batch`-th batch (1-based) to die at `point`."""
    calls = Counter[str]()

    def on(name: str) -> None:
        calls[name] += 1
        if name == point and calls[name] == batch:
            raise Killed(f"{point} of batch {batch}")

    embedder = store.embedder()
    real_embed, real_upsert = embedder.embed_documents, vectors.upsert
    real_keywords = store.keywords.add

    def embed(texts):
        on("embed")  # before the batch's transaction
        return real_embed(texts)

    def keywords(items):
        real_keywords(items)
        on("transaction")  # inside it: rolled back

    def upsert(*args, **kwargs):
        on("vectors")  # after the commit, before the vectors
        real_upsert(*args, **kwargs)

    embedder.embed_documents = embed  # type: ignore[method-assign]
    store.keywords.add = keywords  # type: ignore[method-assign]
    vectors.upsert = upsert  # type: ignore[method-assign]


@pytest.mark.parametrize("point", ["embed", "transaction", "vectors"])
@pytest.mark.parametrize("batch", [1, 3, 6])
def test_a_killed_import_run_again_ends_as_one_clean_import(
        tmp_path: Path, clean_state: dict[str, Any], point: str, batch: int) -> None:
    vectors = MemoryVectors()
    db = tmp_path / "crash.sqlite3"
    store = MemoryStore(db, embedder=lambda: HashEmbedder(dimension=128), vectors=lambda: vectors,
                        clock=FakeClock())
    _kill_at(store, vectors, point, batch)
    with pytest.raises(Killed):
        import_memories(store, _lines(), batch_size=BATCH)
    store.conn.close()  # the process is gone: no clean close, no checkpoint
    del vectors.upsert  # the next process's collection works again

    store = MemoryStore(db, embedder=lambda: HashEmbedder(dimension=128), vectors=lambda: vectors,
                        clock=FakeClock())
    try:
        resumed: list[ImportRun] = []
        committed = (batch - 1 if point != "vectors" else batch) * BATCH
        if committed >= 44:  # killed after the last commit, in the final vector step
            report, errors = import_memories(store, _lines(), batch_size=BATCH)
            # Not "already imported, pass --again" (which would duplicate every line): the
            # re-run says the lines were all stored and repairs the vectors the kill lost.
            assert report.finished_earlier and report.added == 0 and not errors
            assert report.already_stored == 44 and report.repaired == 44 - 5 * BATCH  # the last
            assert _state(store, vectors) == clean_state
            with pytest.raises(AlreadyImported, match="pass --again"):  # now it is complete
                import_memories(store, _lines(), batch_size=BATCH)
            return
        report, errors = import_memories(store, _lines(), batch_size=BATCH,
                                         on_resume=resumed.append)
        assert not errors
        assert report.already_stored == committed
        assert [(r.committed, r.total) for r in resumed] == (
            [(committed, 44)] if committed else [])
        assert report.added == 44 - committed
        assert _state(store, vectors) == clean_state
    finally:
        store.close()


def test_a_line_equal_to_an_existing_memory_is_still_imported(memory_store: MemoryStore) -> None:
    memory_store.add(NewMemory("Likes green tea"))
    lines = [json.dumps({"text": "Likes green tea"}), json.dumps({"text": "Owns a kettle"})]
    report, _ = import_memories(memory_store, lines)
    assert report.added == 2 and report.skipped_duplicates == 0
    assert sorted(m.text for m in memory_store.list()) == [
        "Likes green tea", "Likes green tea", "Owns a kettle"]
    # Asked for, similarity dedup still skips it.
    more = [json.dumps({"text": "Likes green tea"}), json.dumps({"text": "Plays the cello"})]
    report, _ = import_memories(memory_store, more, dedup=True)
    assert (report.added, report.skipped_duplicates) == (1, 1)


def test_a_completed_import_is_refused_and_again_imports_it_in_full(
        memory_store: MemoryStore) -> None:
    lines = _lines()
    import_memories(memory_store, lines, name="plants.jsonl")
    victim = next(m for m in memory_store.list() if m.text == "The user owns plant number 3.")
    memory_store.delete(victim.id)
    # The same memories spelled differently (key order, spaces, CRLF, blank and bad lines).
    respelled = [json.dumps(dict(reversed(json.loads(line).items())), indent=None,
                            separators=(" ,", " : ")) + "\r" for line in lines]
    respelled[5:5] = ["", "not json"]
    with pytest.raises(AlreadyImported, match=r"^plants2.jsonl was already imported as "
                       r"plants.jsonl on .* UTC \(44 memories\); pass --again"):
        import_memories(memory_store, respelled, name="plants2.jsonl")
    assert memory_store.count() == 43  # refused: nothing changed, the deletion stands
    report, _ = import_memories(memory_store, lines, again=True)
    assert report.added == 44 and memory_store.count() == 87
    with pytest.raises(AlreadyImported):
        import_memories(memory_store, lines)


def test_an_interrupted_again_run_resumes_instead_of_starting_over(
        memory_store: MemoryStore, memory_vectors: MemoryVectors) -> None:
    lines = _lines()
    import_memories(memory_store, lines, batch_size=BATCH)
    _kill_at(memory_store, memory_vectors, "embed", 3)
    with pytest.raises(Killed):
        import_memories(memory_store, lines, batch_size=BATCH, again=True)
    report, _ = import_memories(memory_store, lines, batch_size=BATCH, again=True)
    assert report.already_stored == 2 * BATCH and report.added == 44 - 2 * BATCH
    assert memory_store.count() == 88
    assert [(r.committed, r.finished) for r in memory_store.import_runs()] == [
        (44, True), (44, True)]
