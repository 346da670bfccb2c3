"""Export a sentence-transformers model to ONNX, verified against sentence-transformers itself.

The one place that still needs torch (plus the `onnx` package) for CPU embeddings. It runs once
per model: at install (`make` runs `python -m indexing.embedders.onnx_export --install`) or, for
an install made another way, the first time the model is needed. The export is traced with a
padded batch, optimised once by onnxruntime (portable passes only), and then checked end to end
(our tokenizer + session + pooling) against `SentenceTransformer.encode_*` on probe texts of
every shape; below `MIN_COSINE` it is refused and sentence-transformers keeps running the model.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embedders.onnx_store import ONNX_FILE, FoundExport, install_root, publish

MIN_COSINE = 0.99999
OPSET = 17
# Short and long, padded together, truncated, empty, non-Latin, code: every path through the
# tokenizer and the attention mask that indexing and queries take.
PROBES = (
    "how do I rotate the logs?",
    "",
    "x",
    "  leading and trailing spaces  ",
    "Tabs\tand\nnewlines\r\nand ümlauts, café, emoji 🎉",
    "如何压缩一个文件夹 tar 命令",
    "git-stash snake_case camelCase ABC-001 def main(argv: list[str]) -> int:",
    "A long paragraph about logging and rotation. " * 60,  # beyond max_seq_length
)


def export_model(folder: Path, out_dir: Path) -> dict[str, Any]:
    """Write `out_dir/model.onnx` for the sentence-transformers model in `folder`.

    Returns the meta the runtime needs (sequence length, lowercasing, dimension) and how the
    export was verified. Raises on any failure, including a verification below MIN_COSINE.
    """
    from indexing.embedders.sentence import _go_offline

    _go_offline()
    started = time.monotonic()
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    model.eval()
    transformer = model[0]
    max_seq_length = int(model.max_seq_length or 512)
    lowercase = bool(getattr(transformer, "do_lower_case", False))
    dimension = int(model.get_embedding_dimension() or 0)
    hf_model = transformer.auto_model

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    # Traced with padding in the batch, so no "mask is all ones" shortcut gets baked in.
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    raw = out_dir / "raw.onnx"
    dynamic = {name: {0: "batch", 1: "tokens"} for name in
               ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes about shapes, all covered by the check
        torch.onnx.export(
            LastHiddenState(hf_model).eval(),
            (ids, mask, torch.zeros_like(ids)),
            str(raw),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=OPSET,
            dynamo=False,  # the TorchScript exporter needs only `onnx`, not onnxscript
        )
    _optimise(raw, out_dir / ONNX_FILE)
    raw.unlink()
    meta: dict[str, Any] = {
        "max_seq_length": max_seq_length,
        "lowercase": lowercase,
        "dimension": dimension,
        "torch": torch.__version__,
    }
    worst = _verify(model, folder, out_dir, meta)
    meta["verified_min_cosine"] = round(worst, 7)
    meta["export_seconds"] = round(time.monotonic() - started, 1)
    return meta


def _optimise(raw: Path, final: Path) -> None:
    """Save onnxruntime's graph optimisations so every start skips them (~0.5 s per start).

    EXTENDED, not ALL: ALL adds layout transforms tied to this CPU, and the install's copy may
    be used on another machine with the same files.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(final)
    ort.InferenceSession(str(raw), options, providers=["CPUExecutionProvider"])


def _verify(model: Any, folder: Path, out_dir: Path, meta: dict[str, Any]) -> float:
    """Lowest cosine between our ONNX pipeline and sentence-transformers over the probes."""
    import json

    from indexing.embedders.onnx_model import OnnxRunner

    (out_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    try:
        runner = OnnxRunner(FoundExport(out_dir, ""), folder)
        texts = list(PROBES)
        ours = np.concatenate([runner.encode(texts, forward_batch=4), runner.encode(texts[:1])])
        reference = np.concatenate([
            model.encode_document(texts, batch_size=4, convert_to_numpy=True,
                                  show_progress_bar=False),
            model.encode_query(texts[:1], convert_to_numpy=True, show_progress_bar=False),
        ])
    finally:
        (out_dir / "meta.json").unlink(missing_ok=True)

    def unit(m: np.ndarray) -> np.ndarray:
        rows: np.ndarray = m / np.clip(np.linalg.norm(m, axis=1, keepdims=True), 1e-12, None)
        return rows

    worst = float(np.min(np.sum(unit(ours) * unit(np.asarray(reference)), axis=1)))
    if worst < MIN_COSINE:
        raise RuntimeError(
            f"the ONNX export of {folder} differs from sentence-transformers "
            f"(cosine {worst:.6f} < {MIN_COSINE}); keeping sentence-transformers"
        )
    return worst


def main(argv: list[str] | None = None) -> int:
    """`python -m indexing.embedders.onnx_export [--install | --to DIR] [MODEL_FOLDER]`."""
    from indexing.embedders.sentence import bundled_model_path

    parser = argparse.ArgumentParser(
        prog="python -m indexing.embedders.onnx_export",
        description="Export a sentence-transformers model (default: the bundled one) to ONNX, "
        "so queries and indexing run without importing torch.",
    )
    parser.add_argument("folder", nargs="?", type=Path, help="model folder (default: bundled)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--install", action="store_true",
                       help=f"into the install's shared copy ({install_root()})")
    where.add_argument("--to", type=Path, metavar="DIR", help="into DIR")
    args = parser.parse_args(argv)
    folder = (args.folder or bundled_model_path()).resolve()
    root = install_root() if args.install else args.to
    found = publish(folder, root, export_model)
    print(f"{found.onnx_file}", file=sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
