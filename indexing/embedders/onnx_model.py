"""A sentence-transformers model run by onnxruntime + tokenizers: no torch at run time.

Importing torch + sentence-transformers costs ~5 s on an idle machine (30 s under load) and
~400 MB; onnxruntime + tokenizers import in well under a second. For models that are plain
"transformer → mean pooling → normalize" (the bundled all-MiniLM-L6-v2 and its BERT-family
kin) this class computes the same vectors as sentence-transformers (cosine >= 0.99999, checked
when the copy is exported), so it keeps the sentence-transformers model id: the embedding
cache and existing indexes stay valid.

The ONNX copy is made once per model (`onnx_export.py`, which is where torch is still needed)
and found by `onnx_store.find_export`. If there is no copy and none can be made, the model
quietly runs through sentence-transformers instead, slower to start but identical.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders.base import EmbeddingModelError
from indexing.embedders.onnx_store import FoundExport, find_export, publish
from indexing.lazy import Lazy

log = logging.getLogger(__name__)

# Texts per forward pass on CPU: onnxruntime, like torch (see sentence.CPU_FORWARD_BATCH),
# pads every text of a pass to the longest; passes of similar-length texts waste little.
ONNX_FORWARD_BATCH = 8
ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def ineligible_reason(folder: Path) -> str | None:
    """Why `folder` cannot run through ONNX with this class (None: it can), from its files.

    Only what this class reproduces exactly: a BERT-family transformer (token type ids), mean
    pooling, optional normalisation, and no query/document prompts.
    """
    modules = _read_json(folder / "modules.json")
    if not isinstance(modules, list) or not modules:
        return "no modules.json"
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules if isinstance(m, dict)]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return f"modules {kinds}"
    if str(modules[0].get("path", "")) not in ("", "."):
        return "transformer in a subfolder"
    pooling = _read_json(folder / str(modules[1].get("path", "")) / "config.json")
    if not isinstance(pooling, dict) or pooling.get("pooling_mode_mean_tokens") is not True:
        return "not mean pooling"
    if any(v is True for k, v in pooling.items()
           if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"):
        return "several pooling modes"
    config = _read_json(folder / "config.json")
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        return "not a BERT-family model"
    settings = _read_json(folder / "config_sentence_transformers.json") or {}
    prompts = settings.get("prompts") if isinstance(settings, dict) else None
    if isinstance(prompts, dict) and any(prompts.values()):
        return "uses prompts"
    if not (folder / "tokenizer.json").is_file():
        return "no tokenizer.json"
    return None


class OnnxRunner:
    """One loaded ONNX export: tokenizer + inference session, as the export's meta says."""

    def __init__(self, export: FoundExport, folder: Path) -> None:
        meta = _read_json(export.directory / "meta.json") or {}
        try:
            self.max_seq_length = int(meta["max_seq_length"])
            self.lowercase = bool(meta.get("lowercase", False))
            self.dimension = int(meta["dimension"])
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingModelError(f"ONNX export {export.directory} has no usable meta") from exc
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # tokenizer.json may carry its own truncation/padding (MiniLM's says 128, padded):
        # sentence-transformers overrides both per call, and so do we.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_seq_length)
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: no hardware notes on the user's stderr
        # The export is saved already optimised (onnx_export.py): only cheap passes here.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(export.onnx_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(self, texts: Sequence[str], *, forward_batch: int = ONNX_FORWARD_BATCH
               ) -> np.ndarray:
        """Mean-pooled (unnormalised) vectors, n × d float32, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batch = [t.lower() for t in texts] if self.lowercase else list(texts)
        encodings = self._tokenizer.encode_batch(batch, add_special_tokens=True)
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(encodings), self.dimension), dtype=np.float32)
        for start in range(0, len(order), max(1, forward_batch)):
            rows = order[start : start + forward_batch]
            out[rows] = self._forward([encodings[i] for i in rows])
        return out

    def _forward(self, encodings: list[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = enc.attention_mask
            types[row, :n] = enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        # sentence-transformers' mean pooling: masked sum / token count (clamped at 1e-9).
        weights = mask[..., None].astype(np.float32)
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled: np.ndarray = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled


def _close_backend(backend: OnnxRunner | Any) -> None:
    if not isinstance(backend, OnnxRunner):
        backend.unload()  # the torch fallback holds its weights itself


class OnnxSentenceModel:
    """An `InnerModel` for an eligible sentence-transformers folder, on CPU, without torch.

    Loading looks for an export in `roots`; if none exists and `export_root` is set, it makes
    one there (this imports torch once, ~10-30 s). Without an export it falls back to
    sentence-transformers for this process. `backend` says which one ran: "onnx" or "torch".
    """

    def __init__(
        self,
        folder: Path,
        model_id: str,
        *,
        batch_size: int,
        roots: Sequence[Path],
        export_root: Path | None,
    ) -> None:
        from indexing.embedders.sentence import dimension_from_files

        self.model_id = model_id
        self.folder = folder
        self._batch_size = batch_size
        self._roots = [*([export_root] if export_root is not None else []), *roots]
        self._export_root = export_root
        self._dimension = dimension_from_files(folder)
        # Opened on first use; `unload()` closes it and the next use opens it again.
        self._backend: Lazy[OnnxRunner | Any] = Lazy(self._open_backend, close=_close_backend)
        self.backend: str | None = None

    def known_dimension(self) -> int | None:
        return self._dimension

    def load(self) -> None:
        """Load now (e.g. on a background thread while the index opens), not on first use."""
        self._backend.get()

    def unload(self) -> bool:
        """Free the session (or torch model); the next use loads it again. Whether there
        was anything to free."""
        loaded = self._backend.peek() is not None
        self._backend.close()
        return loaded

    def _load(self) -> OnnxRunner | Any:
        return self._backend.get()

    def _open_backend(self) -> OnnxRunner | Any:
        if self.backend != "torch":  # ONNX failed once in this process: do not warn again
            try:
                runner = OnnxRunner(self._find_or_export(), self.folder)
            except Exception as exc:  # any failure here costs speed, never correctness
                # Once a process (the backend is torch after it), so in full.
                log.warning("embedding model %s runs without ONNX (%s: %s)",
                            self.model_id, type(exc).__name__, exc, exc_info=exc)
            else:
                self._dimension = runner.dimension
                self.backend = "onnx"
                return runner
        from indexing.embedders.sentence import SentenceTransformerModel

        self.backend = "torch"
        return SentenceTransformerModel(
            self.folder, self.model_id, device="cpu", batch_size=self._batch_size
        )

    def _find_or_export(self) -> FoundExport:
        if not self.folder.is_dir():
            raise EmbeddingModelError(f"Embedding model folder {self.folder} does not exist.")
        found = find_export(self.folder, self._roots)
        if found is not None:
            return found
        if self._export_root is None:
            raise LookupError("no ONNX export and none may be written here")
        from indexing.embedders.onnx_export import export_model

        log.info("exporting %s to ONNX into %s (once)", self.model_id, self._export_root)
        return publish(self.folder, self._export_root, export_model)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        backend = self._load()
        if isinstance(backend, OnnxRunner):
            return backend.encode(texts)
        return np.asarray(backend.encode_documents(texts), dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        backend = self._load()
        if isinstance(backend, OnnxRunner):
            vector: np.ndarray = backend.encode([text])[0]
            return vector
        return np.asarray(backend.encode_query(text), dtype=np.float32)
