"""Server mode: the VectorStore contract tests against a real `chroma run` on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from indexing.vector_errors import VectorStoreError
from indexing.vectors import VectorStore

# The same tests, collected again here so that they use this module's `location` fixture.
from tests.integration.test_vectors import (  # noqa: F401
    DIM,
    collection,
    store,
    test_collections_are_independent,
    test_drop,
    test_get_embeddings_for_reuse,
    test_ids_filter,
    test_k_larger_than_count_and_empty_collection,
    test_many_vectors_in_batches_and_paged_ids,
    test_metadata_is_optional_and_cleaned,
    test_other_model_is_a_clear_mismatch,
    test_persists_across_reopen,
    test_recreate_switches_models,
    test_upsert_query_returns_cosine_similarity,
    test_upsert_replaces_and_delete_removes,
    test_where_filter,
    test_wrong_size_vector_is_refused_not_a_crash,
    unit,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

CHROMA = Path(sys.executable).with_name("chroma")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ChromaServer:
    """`chroma run --path DIR --port N` as a child process; start/stop on the same port."""

    def __init__(self, path: Path, log: Path) -> None:
        self.path = path
        self.log = log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def healthy(self) -> bool:
        import httpx

        try:
            response = httpx.get(f"{self.url}/api/v2/heartbeat", timeout=0.5, trust_env=False)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def start(self) -> ChromaServer:
        if not CHROMA.exists():
            pytest.skip(f"{CHROMA} is not installed")
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                [
                    str(CHROMA),
                    "run",
                    "--path",
                    str(self.path),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        process = self._process

        def up() -> bool:
            if process.poll() is not None:
                raise AssertionError(
                    f"chroma run exited with {process.returncode}:\n{self.log.read_text()[-2000:]}"
                )
            return self.healthy()

        wait_until(up, 60, "the Chroma server's heartbeat")
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    root = tmp_path_factory.mktemp("chroma-server")
    server = ChromaServer(root / "db", root / "server.log").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def location(chroma_server: ChromaServer) -> str:
    return chroma_server.url


def test_server_really_holds_the_data(chroma_server: ChromaServer, collection: str) -> None:  # noqa: F811
    VectorStore.open(chroma_server.url, collection, model_id="test:model", dimension=DIM).upsert(
        ["x"], unit(1).reshape(1, -1)
    )
    import chromadb
    from chromadb.config import Settings

    raw = chromadb.HttpClient(
        host="127.0.0.1", port=chroma_server.port, settings=Settings(anonymized_telemetry=False)
    )
    stored = raw.get_collection(collection)
    assert stored.count() == 1
    assert stored.metadata["model_id"] == "test:model"
    assert stored.metadata["dimension"] == DIM


def test_server_down_and_back(tmp_path: Path) -> None:
    server = ChromaServer(tmp_path / "db", tmp_path / "server.log").start()
    try:
        store = VectorStore.open(server.url, "restarts", model_id="test:model", dimension=DIM)
        store.upsert(["a"], np.stack([unit(0)]))
        server.stop()
        with pytest.raises(VectorStoreError, match="Chroma server") as info:
            store.query(unit(0), 1)
        assert server.url in str(info.value)
        server.start()  # same port, same data directory
        assert store.query(unit(0), 1)[0][0] == "a"
    finally:
        server.stop()


def test_a_proxy_in_the_environment_is_never_used(
    chroma_server: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12: HTTP(S)_PROXY/ALL_PROXY pointing at a dead port must neither see the vectors
    nor break the store (chromadb's own httpx client trusts the environment)."""
    import socket

    from indexing.chroma_clients import close_all

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"  # nothing listens once closed
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, dead)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    close_all()  # a fresh client, made with the proxy variables set
    vectors = VectorStore.open(chroma_server.url, "proxied", model_id="test:model",
                               dimension=DIM)
    vectors.upsert(["p"], np.stack([unit(2)]))
    assert vectors.query(unit(2), 1)[0][0] == "p"
    import os

    assert os.environ["HTTP_PROXY"] == dead  # put back for everything else
