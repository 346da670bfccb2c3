"""Conversation recall on LoCoMo: does `brain sessions search` find the turns a question needs?

Each LoCoMo conversation gets its own home and is imported with `brain sessions import`
(speaker A as the user, B as the assistant, created_at = the session's date, ref = the dialogue
id of each line). Every question of categories 1-4 goes through `brain sessions search
--queries` (the CLI's own code, run in this process), and is scored by evidence recall@k: the
share of its evidence ids among the refs of the top k hits. The baseline, measured in the same
run over the same turn pairs: plain BM25 (the shared tokenizer) over each turn's question +
answer.

Speed: the import rate over the per-conversation imports (the CLI's whole command with a cold
embedding cache; the model is loaded once beforehand and shared, as in the memory benchmark:
model load is not throughput), and the latency p95 of the search function over every question
on one home holding every conversation twice (~6k turns).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import Report, locomo_file, percentile, timer
from bench.memory import questions, session_date, turn_text

KS = (5, 10)


def import_lines(conversation: dict[str, Any], prefix: str = "") -> list[str]:
    """The conversation as `brain sessions import` lines: speaker A user, B assistant."""
    conv = conversation["conversation"]
    speaker_a = conv["speaker_a"]
    numbers = sorted(int(k.split("_")[1]) for k in conv
                     if k.startswith("session_") and k.split("_")[1].isdigit()
                     and not k.endswith("date_time"))
    lines = []
    for n in numbers:
        created = session_date(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            lines.append(json.dumps({
                "session": f"{prefix}session_{n}",
                "role": "user" if turn["speaker"] == speaker_a else "assistant",
                "text": turn_text(turn), "created_at": created, "ref": turn["dia_id"],
            }))
    return lines


def recall_at(refs: list[list[str]], evidence: set[str], k: int) -> float:
    found = {r for hit in refs[:k] for r in hit}
    return len(evidence & found) / len(evidence)


class PairBM25:
    """The baseline: BM25 over each turn's question + answer, same tokenizer."""

    def __init__(self, lines: list[str]) -> None:
        from assistant.conversations.importing import parse_jsonl
        from indexing.keywords import KeywordIndex

        parsed = parse_jsonl(lines)
        self.refs: dict[str, list[str]] = {}
        items = []
        for session in parsed.sessions:
            for n, turn in enumerate(session.turns):
                key = f"{session.key}#{n}"
                self.refs[key] = [ref for _, ref in turn.refs]
                items.append((key, f"{turn.question}\n{turn.answer}"))
        self.keywords = KeywordIndex(sqlite3.connect(":memory:"), "pairs")
        self.keywords.add(items)

    def search(self, query: str, k: int) -> list[list[str]]:
        return [self.refs[i] for i, _ in self.keywords.search(query, k)]


def _cli(argv: list[str]) -> tuple[int, str]:
    """Run `brain ARGV` in this process (the installed command's code), capturing stdout."""
    from assistant.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    return code, out.getvalue()


def run(quick: bool) -> Report:
    from assistant.context import AppContext

    tmp = Path(tempfile.mkdtemp(prefix="bench-conversations-"))
    original = AppContext.embedder
    try:
        return _run(quick, tmp)
    finally:
        AppContext.embedder = original  # type: ignore[method-assign]
        shutil.rmtree(tmp, ignore_errors=True)


def _run(quick: bool, tmp: Path) -> Report:
    data = json.loads(locomo_file().read_text(encoding="utf-8"))
    conversations = data[:2] if quick else data
    report = Report("conversations", quick)
    scores: dict[str, dict[int, list[float]]] = {"system": {}, "bm25": {}}
    per_category: dict[int, list[float]] = {}
    turns_imported = 0
    import_seconds = 0.0
    embedder = _shared_embedder(tmp)
    all_lines: list[str] = []
    all_questions: list[str] = []
    for n, conversation in enumerate(conversations):
        home = tmp / f"home{n}"
        lines = import_lines(conversation)
        all_lines += import_lines(conversation, prefix=f"c{n}-")
        source = tmp / f"conv{n}.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with timer() as t:
            code, out = _cli(["--home", str(home), "sessions", "import", str(source)])
        assert code == 0, out
        import_seconds += t["seconds"]
        turns_imported += int(out.split("imported ")[1].split(" turns")[0])
        asked = questions(conversation)
        all_questions += [q for _, q, _ in asked]
        queries = tmp / f"queries{n}.jsonl"
        queries.write_text("".join(json.dumps({"query": q}) + "\n" for _, q, _ in asked),
                           encoding="utf-8")
        code, out = _cli(["--home", str(home), "sessions", "search", "--queries", str(queries),
                          "--top-k", str(max(KS))])
        assert code == 0, out
        results = [json.loads(line) for line in out.splitlines()]
        assert len(results) == len(asked)
        baseline = PairBM25(lines)
        for (category, question, evidence), result in zip(asked, results, strict=True):
            assert result["query"] == question
            system_refs = [hit["refs"] for hit in result["hits"]]
            bm25_refs = baseline.search(question, max(KS))
            for k in KS:
                scores["system"].setdefault(k, []).append(recall_at(system_refs, evidence, k))
                scores["bm25"].setdefault(k, []).append(recall_at(bm25_refs, evidence, k))
            per_category.setdefault(category, []).append(scores["system"][10][-1])
        print(f"  conversation {n + 1}/{len(conversations)}: {len(lines)} lines, "
              f"{len(asked)} questions; so far recall@5 {np.mean(scores['system'][5]):.3f} "
              f"@10 {np.mean(scores['system'][10]):.3f} (bm25 @5 "
              f"{np.mean(scores['bm25'][5]):.3f} @10 {np.mean(scores['bm25'][10]):.3f})",
              flush=True)

    def mean(name: str, k: int) -> float:
        return float(np.mean(scores[name][k]))

    report.add("recall_at_5", mean("system", 5), unit="ratio", baseline=mean("bm25", 5),
               baseline_name="BM25 over turn pairs", target=">= 0.75",
               passed=mean("system", 5) >= 0.75)
    report.add("recall_at_10", mean("system", 10), unit="ratio", baseline=mean("bm25", 10),
               baseline_name="BM25 over turn pairs", target=">= 0.83",
               passed=mean("system", 10) >= 0.83)
    rate = turns_imported / import_seconds
    embed_rate = _embedding_rate(embedder, import_lines(conversations[0]))
    report.add("import_turns_per_s", rate, unit="turns/s", target=">= 50", passed=rate >= 50,
               baseline=embed_rate, baseline_name="embedding the same turns alone",
               notes="`brain sessions import` runs, cold embedding cache, model loaded once; "
               "the baseline embeds one conversation's turn texts in the same run (the share "
               "of import time the model takes, whatever the machine's load)")
    latencies, encodes, units = _latency(tmp, embedder, all_lines, all_questions,
                                         copies=1 if quick else 2)
    p95 = percentile(latencies, 95)
    report.add("query_latency_p95", p95, unit="ms", target="<= 50 at 6k turns",
               passed=p95 <= 50 if not quick else None,
               baseline=percentile(encodes, 95),
               baseline_name="the model encoding the question alone",
               notes=f"{units} turns in one home; each question is encoded alone just before "
               "its search (both uncached), so the ratio is what the search adds whatever the "
               "machine's load")
    report.details = {
        "conversations": len(conversations),
        "questions": len(scores["system"][10]),
        "turns": turns_imported,
        "recall_at_10_by_category": {str(c): float(np.mean(v))
                                     for c, v in sorted(per_category.items())},
        "query_latency_p50_ms": percentile(latencies, 50),
        "query_encode_p50_ms": percentile(encodes, 50),
        "latency_home_turns": units,
    }
    return report


def _embedding_rate(embedder: Any, lines: list[str]) -> float:
    """Turns per second the embedding model alone manages on these turns (the texts the index
    embeds, uncached), for the import rate's baseline."""
    from assistant.conversations.documents import EMBED_CHARS, said_text
    from assistant.conversations.importing import parse_jsonl
    from assistant.private_embedding import PrivateEmbedder

    texts = [said_text(t.question, t.answer)[:EMBED_CHARS]
             for s in parse_jsonl(lines).sessions for t in s.turns]
    with timer() as t:
        PrivateEmbedder(embedder).embed_documents(texts)
    return len(texts) / t["seconds"]


def _shared_embedder(tmp: Path) -> Any:
    """One bundled model for every in-process `brain` run (loaded here, once), with a fresh
    embedding cache: each home's commands use it instead of loading the model again."""
    from assistant.context import AppContext
    from indexing.embedder import make_embedder

    embedder = make_embedder("bundled", cache_dir=tmp / "embed-cache", batch_size=64,
                             device="cpu")
    embedder.embed_query("warm up")
    AppContext.embedder = lambda self: embedder  # type: ignore[method-assign]
    return embedder


def _latency(tmp: Path, embedder: Any, lines: list[str], asked: list[str], *,
             copies: int) -> tuple[list[float], list[float], int]:
    """Search latencies over every question on one home holding `copies` of all
    conversations, the model's time to encode each question alone, and the number of turns
    there."""
    from assistant.config import Config
    from assistant.context import AppContext
    from assistant.conversations.importing import import_conversations
    from assistant.conversations.search import search_conversations
    from assistant.conversations.service import open_conversations
    from assistant.paths import AppPaths

    root = tmp / "scale"
    paths = AppPaths(root / "config", root / "data", root / "cache").ensure()
    ctx = AppContext(paths=paths, config=Config(), _embedder=embedder)
    index = open_conversations(ctx)
    for copy in range(copies):
        prefixed = [line.replace('"session": "', f'"session": "x{copy}-', 1) for line in lines]
        import_conversations(index, prefixed, name=f"copy {copy}")
    index.sync()
    turns = index.count()
    model = embedder._inner  # the model itself: no in-memory memo of recent queries
    latencies: list[float] = []
    encodes: list[float] = []
    for question in asked:
        with timer() as t:
            model.encode_query(question)
        encodes.append(t["seconds"] * 1000)
        with timer() as t:
            search_conversations(index, question, top_k=10)
        latencies.append(t["seconds"] * 1000)
    index.store.close()
    return latencies, encodes, turns
