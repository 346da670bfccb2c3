"""Memory benchmark on LoCoMo: can `memory search` find the conversation turns a question needs?

Each conversation gets its own home; its turns are imported (the `brain memory import` path) as
`episode` memories with created_at = the session date and source = the turn id. Every question
of categories 1-4 is then run through memory search and scored by evidence recall@k: the
fraction of its evidence turn ids among the top k sources. Baselines are measured in the same
run over the same raw turns: BM25 only, MiniLM dense only, and plain RRF of the two.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import Report, locomo_file, percentile, timer

CATEGORIES = (1, 2, 3, 4)
KS = (5, 10)
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def session_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' → '2023-05-08T13:56:00Z'."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def import_lines(conversation: dict[str, Any]) -> list[str]:
    """The conversation as `brain memory import` JSONL lines."""
    conv = conversation["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    lines = []
    for n in numbers:
        created = session_date(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            lines.append(json.dumps({
                "text": turn_text(turn), "type": "episode", "created_at": created,
                "source": turn["dia_id"], "session": f"session_{n}",
            }))
    return lines


def questions(conversation: dict[str, Any]) -> list[tuple[int, str, set[str]]]:
    """(category, question, evidence turn ids) for categories 1-4 (ids as in the turns)."""
    out = []
    for qa in conversation["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = {f"D{a}:{b}" for item in qa.get("evidence", [])
                    for a, b in _EVIDENCE.findall(str(item))}
        if evidence:
            out.append((int(qa["category"]), str(qa["question"]), evidence))
    return out


def recall_at(results: Sequence[str], evidence: set[str], k: int) -> float:
    return len(evidence & set(results[:k])) / len(evidence)


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda i: -scores[i])


class Baselines:
    """BM25 (same tokenizer), MiniLM dense and RRF over the raw turn texts."""

    def __init__(self, embedder: Any, sources: list[str], texts: list[str]) -> None:
        from indexing.keywords import KeywordIndex

        self.embedder = embedder
        self.sources = sources
        self.conn = sqlite3.connect(":memory:")
        self.keywords = KeywordIndex(self.conn, "bench_fts")
        self.keywords.add(zip(sources, texts, strict=True))
        self.matrix = embedder.embed_documents(texts)

    def bm25(self, query: str, k: int) -> list[str]:
        return [i for i, _ in self.keywords.search(query, k)]

    def dense(self, query: str, k: int) -> list[str]:
        scores = self.matrix @ self.embedder.embed_query(query)
        return [self.sources[i] for i in np.argsort(-scores)[:k]]

    def rrf(self, query: str, k: int) -> list[str]:
        return rrf([self.bm25(query, 50), self.dense(query, 50)])[:k]


def run(quick: bool) -> Report:
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    try:
        return _run(quick, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(quick: bool, tmp: Path) -> Report:
    from assistant.config import Config
    from assistant.context import AppContext
    from assistant.memory.service import MemoryService
    from assistant.memory.transfer import import_memories
    from assistant.paths import AppPaths
    from indexing.embedder import make_embedder

    data = json.loads(locomo_file().read_text(encoding="utf-8"))
    conversations = data[:2] if quick else data
    report = Report("memory", quick)
    embedder = make_embedder("bundled", cache_dir=tmp / "embed-cache", batch_size=64,
                             device="cpu")
    embedder.embed_query("warm up")  # model load is not import throughput
    systems: dict[str, Callable[[str, int], list[str]]]
    scores: dict[str, dict[int, list[float]]] = {}
    latencies: list[float] = []
    imported = 0
    import_seconds = 0.0
    per_category: dict[int, list[float]] = {}
    for n, conversation in enumerate(conversations):
        root = tmp / f"home{n}"
        paths = AppPaths(root / "config", root / "data", root / "cache").ensure()
        ctx = AppContext(paths=paths, config=Config(), _embedder=embedder)
        service = MemoryService.open(ctx)
        lines = import_lines(conversation)
        with timer() as t:
            report_, errors = import_memories(service.store, lines)
        assert not errors, errors[:3]
        imported += report_.added
        import_seconds += t["seconds"]
        sources = [json.loads(line)["source"] for line in lines]
        texts = [json.loads(line)["text"] for line in lines]
        baselines = Baselines(embedder, sources, texts)
        store = service.store

        def memory_search(query: str, k: int, service: MemoryService = service) -> list[str]:
            return [r.memory.source or "" for r in service.search(query, k)]

        systems = {"memory": memory_search, "bm25": baselines.bm25,
                   "dense": baselines.dense, "rrf": baselines.rrf}
        asked = questions(conversation)
        for category, question, evidence in asked:
            for name, system in systems.items():
                with timer() as t:
                    results = system(question, max(KS))
                if name == "memory":
                    latencies.append(t["seconds"] * 1000)
                for k in KS:
                    scores.setdefault(name, {}).setdefault(k, []).append(
                        recall_at(results, evidence, k))
            per_category.setdefault(category, []).append(scores["memory"][10][-1])
        assert store.count() == len(lines)
        service.close()
        print(f"  conversation {n + 1}/{len(conversations)}: {len(lines)} turns, "
              f"{len(asked)} questions; so far memory recall@5 "
              f"{np.mean(scores['memory'][5]):.3f} @10 {np.mean(scores['memory'][10]):.3f}",
              flush=True)

    def mean(name: str, k: int) -> float:
        return float(np.mean(scores[name][k]))

    best = max(("bm25", "dense", "rrf"), key=lambda name: mean(name, 10))
    report.add("recall_at_10", mean("memory", 10), unit="ratio", baseline=mean(best, 10),
               baseline_name=f"{best} (best naive)", target=">= 0.75",
               passed=mean("memory", 10) >= 0.75)
    report.add("recall_at_5", mean("memory", 5), unit="ratio", baseline=mean(best, 5),
               baseline_name=f"{best} (best naive)", target=">= 0.65",
               passed=mean("memory", 5) >= 0.65)
    for name in ("bm25", "dense", "rrf"):
        for k in KS:
            report.add(f"baseline_{name}_recall_at_{k}", mean(name, k), unit="ratio")
    report.add("import_memories_per_s", imported / import_seconds, unit="memories/s",
               notes="embedding included, cold cache")
    report.add("search_latency_p95", percentile(latencies, 95), unit="ms")
    report.details = {
        "conversations": len(conversations),
        "questions": len(scores["memory"][10]),
        "memories": imported,
        "recall_at_10_by_category": {str(c): float(np.mean(v)) for c, v in
                                     sorted(per_category.items())},
        "search_latency_p50_ms": percentile(latencies, 50),
    }
    return report
