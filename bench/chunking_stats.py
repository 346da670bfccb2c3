"""Loading + chunking throughput and chunk statistics on a folder (default: the tldr corpus).

`measure(root)` walks, reads and chunks every file exactly as a sync does (no embedding) and
returns counts, timings and the chunk size distribution; `add_results(report, stats)` puts them
into a bench `Report` (the indexing bench can call both). Run alone:

    python -m bench.chunking_stats [--quick] [--llama-baseline] [FOLDER]

`--llama-baseline` also times LlamaIndex's default node parser (`SentenceSplitter`, as used by
`VectorStoreIndex.from_documents`) on the same texts, in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Report, percentile, tldr_dir
from indexing.chunking import ChunkSettings, chunk_file
from indexing.readers import DecodedFile, SkipFile, read_file
from indexing.sources import Skipped, SourceFile, SourceSettings, walk

QUICK_FILES = 1500


@dataclass
class ChunkingStats:
    folder: str
    files: int = 0
    chunks: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    walk_seconds: float = 0.0
    read_seconds: float = 0.0
    chunk_seconds: float = 0.0
    text_chars: int = 0
    chunk_chars: dict[str, float] = field(default_factory=dict)  # min/p10/p50/p90/max/mean
    chunks_per_file: dict[str, int] = field(default_factory=dict)  # "1", "2", …
    languages: dict[str, int] = field(default_factory=dict)
    llama_seconds: float | None = None
    llama_nodes: int | None = None

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.chunk_seconds if self.chunk_seconds else float("nan")

    @property
    def files_per_second(self) -> float:
        total = self.walk_seconds + self.read_seconds + self.chunk_seconds
        return self.files / total if total else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {
            "chunks_per_second": self.chunks_per_second,
            "files_per_second": self.files_per_second,
        }


def measure(
    root: Path,
    *,
    sources: SourceSettings | None = None,
    chunking: ChunkSettings | None = None,
    limit: int | None = None,
    llama_baseline: bool = False,
) -> ChunkingStats:
    sources = sources or SourceSettings()
    chunking = chunking or ChunkSettings()
    stats = ChunkingStats(folder=str(root))
    skipped: Counter[str] = Counter()

    started = time.perf_counter()
    files: list[SourceFile] = []
    for item in walk(root, sources):
        if isinstance(item, Skipped):
            skipped[item.reason.value] += 1
        else:
            files.append(item)
        if limit is not None and len(files) >= limit:
            break
    stats.walk_seconds = time.perf_counter() - started

    started = time.perf_counter()
    decoded: list[tuple[SourceFile, DecodedFile]] = []
    for source in files:
        try:
            decoded.append((source, read_file(source.path, max_bytes=sources.max_file_bytes)))
        except SkipFile as exc:
            skipped[exc.reason.value] += 1
    stats.read_seconds = time.perf_counter() - started

    started = time.perf_counter()
    per_file = [chunk_file(source, text, chunking) for source, text in decoded]
    stats.chunk_seconds = time.perf_counter() - started

    chunks = [c for file_chunks in per_file for c in file_chunks]
    lengths = [float(len(c.text)) for c in chunks]
    stats.files = len(decoded)
    stats.chunks = len(chunks)
    stats.skipped = dict(sorted(skipped.items()))
    stats.text_chars = sum(len(text.text) for _, text in decoded)
    if lengths:
        stats.chunk_chars = {
            "min": min(lengths),
            "p10": percentile(lengths, 10),
            "p50": percentile(lengths, 50),
            "p90": percentile(lengths, 90),
            "max": max(lengths),
            "mean": round(statistics.fmean(lengths), 1),
        }
    counts = Counter(len(file_chunks) for file_chunks in per_file)
    stats.chunks_per_file = {str(k): v for k, v in sorted(counts.items())}
    stats.languages = dict(Counter(c.language for c in chunks).most_common())
    if llama_baseline:
        stats.llama_seconds, stats.llama_nodes = _llama_split([t for _, t in decoded], chunking)
    return stats


def _llama_split(texts: list[DecodedFile], chunking: ChunkSettings) -> tuple[float, int]:
    """LlamaIndex's default transformation of `VectorStoreIndex.from_documents`."""
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    documents = [Document(text=t.text) for t in texts]
    splitter = SentenceSplitter(chunk_overlap=min(200, chunking.chunk_overlap))
    started = time.perf_counter()
    nodes = splitter.get_nodes_from_documents(documents)
    return time.perf_counter() - started, len(nodes)


def add_results(report: Report, stats: ChunkingStats) -> None:
    baseline: dict[str, Any] = {}
    if stats.llama_seconds is not None:
        baseline = {
            "baseline": stats.llama_seconds,
            "baseline_name": "LlamaIndex SentenceSplitter",
        }
    report.add(
        "chunk_seconds",
        stats.chunk_seconds,
        unit="s",
        target="a few seconds for tldr",
        passed=stats.chunk_seconds < 5,
        notes=f"{stats.files} files → {stats.chunks} chunks",
        **baseline,
    )
    report.add("chunks_per_second", stats.chunks_per_second, unit="chunks/s")
    report.add("load_files_per_second", stats.files_per_second, unit="files/s",
               notes="walk + read + chunk")  # fmt: skip
    report.add("chunk_chars_p50", stats.chunk_chars.get("p50", float("nan")), unit="chars")
    report.add("chunk_chars_p90", stats.chunk_chars.get("p90", float("nan")), unit="chars")
    report.details["chunking"] = stats.as_dict()


def run(quick: bool) -> Report:
    report = Report("chunking", quick)
    stats = measure(tldr_dir(), limit=QUICK_FILES if quick else None, llama_baseline=True)
    add_results(report, stats)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chunking_stats")
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_FILES} files only")
    parser.add_argument("--llama-baseline", action="store_true")
    args = parser.parse_args(argv)
    folder = args.folder or tldr_dir()
    stats = measure(
        folder, limit=QUICK_FILES if args.quick else None, llama_baseline=args.llama_baseline
    )
    print(f"folder            {stats.folder}")
    print(f"files             {stats.files}  (skipped: {stats.skipped or 'none'})")
    print(f"chunks            {stats.chunks}  per file: {stats.chunks_per_file}")
    print(f"walk / read       {stats.walk_seconds:.2f} s / {stats.read_seconds:.2f} s")
    print(
        f"chunk             {stats.chunk_seconds:.2f} s  ({stats.chunks_per_second:,.0f} chunks/s)"
    )
    print(f"chunk size chars  {stats.chunk_chars}")
    print(f"languages         {stats.languages}")
    if stats.llama_seconds is not None:
        print(
            f"LlamaIndex        SentenceSplitter {stats.llama_seconds:.2f} s"
            f" → {stats.llama_nodes} nodes"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
