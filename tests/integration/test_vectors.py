"""VectorStore against embedded Chroma. test_chroma_server.py re-runs the contract tests below
against a real `chroma run` server by overriding the `location` fixture."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from indexing.vector_errors import EmbeddingModelMismatch, VectorStoreDamaged, VectorStoreError
from indexing.vectors import VectorStore

DIM = 8


def unit(*hot: int, dim: int = DIM) -> np.ndarray:
    vector = np.zeros(dim, dtype=np.float32)
    for i in hot:
        vector[i] = 1.0
    return vector / np.linalg.norm(vector)


@pytest.fixture
def location(tmp_path: Path) -> str:
    return str(tmp_path / "vectors")


@pytest.fixture
def collection() -> str:
    # Unique per test so tests can share one server.
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(location: str, collection: str) -> VectorStore:
    return VectorStore.open(location, collection, model_id="test:model", dimension=DIM)


# -- the contract (also run against a server) ----------------------------------------------


def test_upsert_query_returns_cosine_similarity(store: VectorStore) -> None:
    store.upsert(
        ["a", "b", "c"],
        np.stack([unit(0), unit(0, 1), unit(5)]),
        [{"root": "/notes"}, {"root": "/code"}, {"root": "/notes"}],
    )
    hits = store.query(unit(0), 3)
    assert [h[0] for h in hits] == ["a", "b", "c"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert hits[1][1] == pytest.approx(float(unit(0) @ unit(0, 1)), abs=1e-5)
    assert hits[2][1] == pytest.approx(0.0, abs=1e-5)
    assert store.count() == 3


def test_where_filter(store: VectorStore) -> None:
    store.upsert(
        ["a", "b", "c"],
        np.stack([unit(0), unit(0, 1), unit(5)]),
        [{"root": "/notes"}, {"root": "/code"}, {"root": "/notes"}],
    )
    assert [h[0] for h in store.query(unit(0), 5, where={"root": "/notes"})] == ["a", "c"]
    assert store.query(unit(0), 5, where={"root": "/elsewhere"}) == []


def test_ids_filter(store: VectorStore) -> None:
    store.upsert(
        ["a", "b", "c", "d"],
        np.stack([unit(0), unit(0, 1), unit(5), unit(0, 2)]),
        [{"root": "/notes"}, {"root": "/code"}, {"root": "/notes"}, {"root": "/code"}],
    )
    assert [h[0] for h in store.query(unit(0), 5, ids={"b", "c", "missing"})] == ["b", "c"]
    assert [h[0] for h in store.query(unit(0), 1, ids=["c", "d"])] == ["d"]
    assert [h[0] for h in store.query(unit(0), 5, ids={"b", "c"}, where={"root": "/notes"})] == [
        "c"
    ]
    assert store.query(unit(0), 5, ids=set()) == []


def test_k_larger_than_count_and_empty_collection(store: VectorStore) -> None:
    assert store.query(unit(1), 10) == []
    assert store.count() == 0
    assert store.ids() == []
    store.upsert(["only"], unit(1).reshape(1, -1))
    assert [h[0] for h in store.query(unit(1), 50)] == ["only"]
    assert store.query(unit(1), 0) == []


def test_upsert_replaces_and_delete_removes(store: VectorStore) -> None:
    store.upsert(["a", "b"], np.stack([unit(0), unit(1)]))
    store.upsert(["a"], unit(2).reshape(1, -1))
    assert store.count() == 2
    (best, similarity), = store.query(unit(2), 1)
    assert best == "a" and similarity == pytest.approx(1.0, abs=1e-5)
    store.delete(["a", "never-existed"])
    assert store.ids() == ["b"]
    store.delete([])
    assert store.count() == 1


def test_metadata_is_optional_and_cleaned(store: VectorStore) -> None:
    store.upsert(
        ["a", "b", "c"],
        np.stack([unit(0), unit(1), unit(2)]),
        [None, {}, {"root": "/x", "page": None, "n": 3, "tags": ["x"]}],
    )
    assert sorted(store.ids()) == ["a", "b", "c"]
    assert [h[0] for h in store.query(unit(2), 3, where={"n": 3})] == ["c"]


def test_many_vectors_in_batches_and_paged_ids(store: VectorStore) -> None:
    rng = np.random.default_rng(0)
    n = 5200  # more than one upsert batch and one ids() page
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"v{i}" for i in range(n)]
    store.upsert(ids, vectors)
    assert store.count() == n
    assert sorted(store.ids()) == sorted(ids)
    best = store.query(vectors[1234], 1)
    assert best[0][0] == "v1234"
    store.delete(ids[:2500])
    assert store.count() == n - 2500


def test_get_embeddings_for_reuse(store: VectorStore) -> None:
    store.upsert(["a", "b"], np.stack([unit(0), unit(3)]))
    got = store.get_embeddings(["b", "missing", "a"])
    assert set(got) == {"a", "b"}
    np.testing.assert_allclose(got["b"], unit(3), atol=1e-6)
    assert got["a"].dtype == np.float32
    assert store.get_embeddings([]) == {}


def test_persists_across_reopen(location: str, collection: str) -> None:
    first = VectorStore.open(location, collection, model_id="test:model", dimension=DIM)
    first.upsert(["kept"], unit(4).reshape(1, -1))
    again = VectorStore.open(location, collection, model_id="test:model", dimension=DIM)
    assert again.ids() == ["kept"]
    assert again.query(unit(4), 1)[0][0] == "kept"


def test_other_model_is_a_clear_mismatch(location: str, collection: str) -> None:
    VectorStore.open(location, collection, model_id="test:model", dimension=DIM).upsert(
        ["a"], unit(0).reshape(1, -1)
    )
    with pytest.raises(EmbeddingModelMismatch) as info:
        VectorStore.open(location, collection, model_id="test:other", dimension=DIM)
    message = str(info.value)
    assert "test:model" in message and "test:other" in message
    assert "brain index --sync" in message
    with pytest.raises(EmbeddingModelMismatch, match="16-d"):
        VectorStore.open(location, collection, model_id="test:model", dimension=16)


def test_recreate_switches_models(location: str, collection: str) -> None:
    VectorStore.open(location, collection, model_id="test:model", dimension=DIM).upsert(
        ["a"], unit(0).reshape(1, -1)
    )
    fresh = VectorStore.open(location, collection, model_id="test:big", dimension=16, recreate=True)
    assert fresh.count() == 0
    fresh.upsert(["a"], unit(0, dim=16).reshape(1, -1))
    assert fresh.query(unit(0, dim=16), 1)[0][0] == "a"
    # ...and from now on the old model is the mismatch.
    with pytest.raises(EmbeddingModelMismatch):
        VectorStore.open(location, collection, model_id="test:model", dimension=DIM)


def test_wrong_size_vector_is_refused_not_a_crash(store: VectorStore) -> None:
    with pytest.raises(EmbeddingModelMismatch):
        store.upsert(["a"], np.ones((1, DIM + 1), dtype=np.float32))
    with pytest.raises(EmbeddingModelMismatch):
        store.query(np.ones(DIM - 1, dtype=np.float32), 3)
    assert store.count() == 0


def test_bad_arguments(store: VectorStore) -> None:
    with pytest.raises(ValueError, match="unique"):
        store.upsert(["a", "a"], np.stack([unit(0), unit(1)]))
    with pytest.raises(ValueError, match="expected 2 embeddings"):
        store.upsert(["a", "b"], unit(0).reshape(1, -1))
    with pytest.raises(ValueError, match="metadatas"):
        store.upsert(["a"], unit(0).reshape(1, -1), [{}, {}])


def test_drop(location: str, collection: str) -> None:
    store = VectorStore.open(location, collection, model_id="test:model", dimension=DIM)
    store.upsert(["a"], unit(0).reshape(1, -1))
    store.drop()
    with pytest.raises(VectorStoreError, match="dropped"):
        store.count()
    # Dropping frees the name for any model.
    reopened = VectorStore.open(location, collection, model_id="test:other", dimension=4)
    assert reopened.count() == 0


def test_collections_are_independent(location: str, collection: str) -> None:
    knowledge = VectorStore.open(location, collection, model_id="test:model", dimension=DIM)
    memories = VectorStore.open(location, collection + "-mem", model_id="test:m2", dimension=4)
    knowledge.upsert(["k"], unit(0).reshape(1, -1))
    memories.upsert(["m"], unit(0, dim=4).reshape(1, -1))
    assert knowledge.ids() == ["k"]
    assert memories.ids() == ["m"]


def test_invalid_names(location: str) -> None:
    for name in ("x", "bad name", "-leading", "ünï"):
        with pytest.raises(VectorStoreError, match="Invalid collection name"):
            VectorStore.open(location, name, model_id="test:model", dimension=DIM)
    with pytest.raises(VectorStoreError, match="dimension"):
        VectorStore.open(location, "valid-name", model_id="test:model", dimension=0)


# -- embedded-only behaviour -----------------------------------------------------------------


def test_one_client_per_location(tmp_path: Path) -> None:
    from indexing import chroma_clients

    one = VectorStore.open(tmp_path / "v", "first-coll", model_id="m", dimension=4)
    two = VectorStore.open(str(tmp_path / "v") + "/", "second-coll", model_id="m", dimension=4)
    assert one._client is two._client
    assert chroma_clients.client_key(tmp_path / "v") in chroma_clients._clients


def test_foreign_collections(tmp_path: Path) -> None:
    from indexing import chroma_clients

    raw = chroma_clients.shared_client(tmp_path / "v")
    raw.create_collection("empty-foreign", embedding_function=None)
    used = raw.create_collection("used-foreign", embedding_function=None)
    used.add(ids=["x"], embeddings=[[1.0, 0.0, 0.0, 0.0]])

    adopted = VectorStore.open(tmp_path / "v", "empty-foreign", model_id="m", dimension=4)
    adopted.upsert(["a", "b"], np.stack([unit(0, dim=4), unit(1, dim=4)]))
    assert adopted.query(unit(0, dim=4), 2)[1][1] == pytest.approx(0.0, abs=1e-5)  # cosine
    with pytest.raises(EmbeddingModelMismatch, match="another program"):
        VectorStore.open(tmp_path / "v", "used-foreign", model_id="m", dimension=4)


def test_corrupted_store_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "chroma.sqlite3").write_bytes(b"this is not sqlite" * 500)
    with pytest.raises(VectorStoreDamaged, match="cannot be used") as info:
        VectorStore.open(broken, "knowledge", model_id="m", dimension=4)
    assert str(broken / "chroma.sqlite3") in str(info.value)
    assert "brain index --rebuild" in str(info.value)


def test_location_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("not a directory", encoding="utf-8")
    with pytest.raises(VectorStoreError, match="is a file"):
        VectorStore.open(target, "knowledge", model_id="m", dimension=4)


def test_unreachable_server_is_a_clear_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    with pytest.raises(VectorStoreError, match="Cannot reach the Chroma server") as info:
        VectorStore.open(f"http://127.0.0.1:{port}", "knowledge", model_id="m", dimension=4)
    assert "chroma run" in str(info.value)


@pytest.mark.parametrize("url", ["http://", "http://127.0.0.1:notaport"])
def test_invalid_server_url(url: str) -> None:
    with pytest.raises(VectorStoreError, match="Invalid"):
        VectorStore.open(url, "knowledge", model_id="m", dimension=4)


def test_derived_vectors_of_another_model_start_afresh(location: str, collection: str) -> None:
    """The derived-index model-switch rule: never mix two models' vectors in one collection."""
    from indexing.derived_index import open_vectors

    VectorStore.open(location, collection, model_id="test:model", dimension=DIM).upsert(
        ["a"], unit(0).reshape(1, -1)
    )
    same = open_vectors(location, collection, model_id="test:model", dimension=DIM, what="t")
    assert same.ids() == ["a"]
    other = open_vectors(location, collection, model_id="test:big", dimension=16, what="t")
    assert other.count() == 0
    with pytest.raises(EmbeddingModelMismatch):
        VectorStore.open(location, collection, model_id="test:model", dimension=DIM)
