"""The derived-index core: rows are the truth, vectors follow them (indexing/derived_index.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from indexing.derived_index import DerivedIndex, Rows, VectorDoc, collection_name
from indexing.progress import Phase, SyncProgress
from tests.fakes import HashEmbedder
from tests.fixtures.memory import MemoryVectors


class Table:
    """Rows in a dict: id → text (the SQLite side of a derived index)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = dict(texts)
        self.asked: list[list[str]] = []

    def docs(self, ids: Sequence[str]) -> list[VectorDoc]:
        self.asked.append(list(ids))
        return [VectorDoc(i, self.texts[i], {"n": len(self.texts[i])})
                for i in ids if i in self.texts]

    def rows(self) -> Rows:
        return Rows(ids=lambda: set(self.texts), docs=self.docs)


class Killed(Exception):
    pass


def _index(vectors: MemoryVectors, embedder: HashEmbedder, *, batch: int = 2,
           events: list[SyncProgress] | None = None, kill_after: int | None = None
           ) -> DerivedIndex:
    calls = 0

    def embed(texts: Sequence[str]) -> np.ndarray:
        nonlocal calls
        if kill_after is not None and calls >= kill_after:
            raise Killed
        calls += 1
        return embedder.embed_documents(list(texts))

    return DerivedIndex(lambda: vectors, embed, batch=batch,
                        progress=None if events is None else events.append)


def test_reconcile_deletes_orphans_and_embeds_missing_in_batches() -> None:
    table = Table({f"r{i}": f"row number {i}" for i in range(5)})
    vectors = MemoryVectors()
    embedder = HashEmbedder()
    vectors.upsert(["r0", "gone"], embedder.embed_documents(["row number 0", "x"]), [{}, {}])
    events: list[SyncProgress] = []
    fixed = _index(vectors, embedder, events=events).reconcile(table.rows())
    assert (fixed.removed, fixed.repaired, fixed.fixed) == (1, 4, 5)
    assert sorted(vectors.ids()) == sorted(table.texts)
    assert table.asked == [["r1", "r2"], ["r3", "r4"]]
    assert [(e.phase, e.chunks_done, e.chunks_total) for e in events] == [
        (Phase.repairing, 2, 4), (Phase.repairing, 4, 4)]
    np.testing.assert_allclose(vectors.data["r3"], embedder.embed_documents(["row number 3"])[0])
    # Nothing left to fix: nothing embedded.
    before = embedder.texts_embedded
    assert _index(vectors, embedder).reconcile(table.rows()).fixed == 0
    assert embedder.texts_embedded == before


def test_reconcile_killed_mid_way_is_finished_by_the_next() -> None:
    table = Table({f"r{i}": f"row {i}" for i in range(6)})
    vectors = MemoryVectors()
    embedder = HashEmbedder()
    with pytest.raises(Killed):
        _index(vectors, embedder, kill_after=1).reconcile(table.rows())
    assert sorted(vectors.ids()) == ["r0", "r1"]  # the finished batch stays done
    fixed = _index(vectors, embedder).reconcile(table.rows())
    assert fixed.repaired == 4
    assert sorted(vectors.ids()) == sorted(table.texts)


def test_reconcile_skips_rows_deleted_meanwhile_and_follows_the_order() -> None:
    table = Table({"a": "long long long text", "b": "short", "c": "mid text"})
    vectors = MemoryVectors()
    rows = Rows(ids=lambda: set(table.texts) | {"vanished"}, docs=table.docs,
                order=lambda ids: sorted(ids, key=lambda i: len(table.texts.get(i, ""))))
    _index(vectors, HashEmbedder(), batch=10).reconcile(rows)
    assert table.asked == [["vanished", "b", "c", "a"]]
    assert sorted(vectors.ids()) == ["a", "b", "c"]


def test_write_puts_vectors_before_the_commit_and_forget_after() -> None:
    vectors = MemoryVectors()
    table = Table({})
    index = _index(vectors, HashEmbedder())
    seen: list[list[str]] = []

    def commit() -> str:
        seen.append(sorted(vectors.ids()))  # the vectors are there when the rows commit
        table.texts["n"] = "new row"
        return "committed"

    assert index.write([VectorDoc("n", "new row")], commit) == "committed"
    assert seen == [["n"]]
    # A commit that fails (a kill) leaves only a vector without a row: reconcile deletes it.
    with pytest.raises(Killed):
        index.write([VectorDoc("o", "orphan")], lambda: (_ for _ in ()).throw(Killed()))
    assert sorted(vectors.ids()) == ["n", "o"]
    assert index.reconcile(table.rows()).removed == 1
    del table.texts["n"]
    assert index.forget(["n"]) == 1 and vectors.ids() == []
    assert index.forget([]) == 0


def test_nothing_to_write_never_opens_the_store() -> None:
    opened = 0

    def open_store() -> MemoryVectors:
        nonlocal opened
        opened += 1
        return MemoryVectors()

    index = DerivedIndex(open_store, HashEmbedder().embed_documents, batch=4)
    assert index.write([], lambda: 1) == 1
    index.forget([])
    assert opened == 0


def test_rebuild_offers_the_stored_ids_then_drops_what_no_row_derives() -> None:
    table = Table({"keep": "same", "new": "added"})
    vectors = MemoryVectors()
    embedder = HashEmbedder()
    vectors.upsert(["keep", "old"], embedder.embed_documents(["same", "old"]), [{}, {}])
    offered: list[set[str]] = []

    def rewrite(present: set[str]) -> int:
        offered.append(present)
        return 7

    result, fixed = _index(vectors, embedder).rebuild(table.rows(), rewrite)
    assert result == 7 and offered == [{"keep", "old"}]
    assert (fixed.removed, fixed.repaired) == (1, 1)  # "old" gone, "new" embedded
    assert sorted(vectors.ids()) == ["keep", "new"]


def test_one_collection_per_model() -> None:
    name = collection_name("conversations", "m:a", 64)
    assert name.startswith("conversations-") and name == collection_name("conversations", "m:a", 64)
    assert name != collection_name("conversations", "m:b", 64)
    assert name != collection_name("conversations", "m:a", 128)
    assert collection_name("knowledge", "m:a", 64).split("-")[1] == name.split("-")[1]


def test_catch_up_does_what_the_rows_owe_and_a_kill_leaves_it_owed() -> None:
    table = Table({"p1": "first", "p2": "second", "p3": "third"})
    vectors = MemoryVectors()
    embedder = HashEmbedder()
    vectors.upsert(["s1"], embedder.embed_documents(["stale"]), [{}])
    owed = {"stale": ["s1"], "pending": ["p1", "p2", "p3"]}

    def forgotten(ids: Sequence[str]) -> None:
        assert "s1" not in vectors.ids()  # recorded only once the vector is gone
        owed["stale"] = [i for i in owed["stale"] if i not in ids]

    def written(ids: Sequence[str]) -> None:
        assert set(ids) <= set(vectors.ids())  # recorded only once the vectors are in
        owed["pending"] = [i for i in owed["pending"] if i not in ids]

    def run(index: DerivedIndex) -> int:
        return index.catch_up(table.docs, stale=list(owed["stale"]),
                              pending=list(owed["pending"]), forgotten=forgotten,
                              written=written)

    with pytest.raises(Killed):
        run(_index(vectors, embedder, kill_after=1))
    assert owed == {"stale": [], "pending": ["p3"]}
    assert run(_index(vectors, embedder)) == 1
    assert owed == {"stale": [], "pending": []}
    assert sorted(vectors.ids()) == ["p1", "p2", "p3"]
    before = embedder.calls
    assert run(_index(vectors, embedder)) == 0 and embedder.calls == before
