"""Chat: what the user waits for in a session (bench/chat_session.py, a CPU-realistic fake
Ollama), and the engine's own overhead: from pressing enter to the request leaving for Ollama.

One turn's work before the model is called: knowledge retrieval ∥ memory recall (concurrent),
then prompt assembly with token budgets. Measured through the real `ChatEngine` over the tldr
index (the retrieval bench's home under bench/results/tmp/ when it exists, else a small index
built here) and a memory store with 1,000 memories (LoCoMo dialogue turns), with the fake Ollama
server answering instantly. Target: p95 <= 80 ms.

Baseline, same run: the same retrieval and recall called one after the other, without the
engine (no prompt assembly, no concurrency) — the ratio shows what the engine adds or saves.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    DATA_DIR,
    RESULTS_DIR,
    MissingData,
    Report,
    locomo_file,
    percentile,
    tldr_dir,
)

TMP = RESULTS_DIR / "tmp"
RETRIEVAL_HOME = TMP / "retrieval-home"
SMALL_HOME = TMP / "chat-home"
MEMORIES = 1000
TARGET_MS = 80.0


def _questions(limit: int) -> list[str]:
    path = DATA_DIR / "tldr_golden.jsonl"
    if not path.is_file():
        raise MissingData(f"{path} not found")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    # Interleave languages so a quick run still has both.
    en = [r["query"] for r in rows if r.get("lang") != "zh"]
    zh = [r["query"] for r in rows if r.get("lang") == "zh"]
    mixed: list[str] = []
    for i in range(max(len(en), len(zh))):
        mixed += [q[i] for q in (en, zh) if i < len(q)]
    return mixed[:limit]


def _knowledge_home(quick: bool) -> Path:
    """The retrieval bench's full tldr home if it was built, else a small tldr index here."""
    db = RETRIEVAL_HOME / "data" / "knowledge.sqlite3"
    if db.is_file():
        return RETRIEVAL_HOME
    from assistant.context import AppContext
    from assistant.knowledge_service import open_knowledge, sync_settings

    corpus = tldr_dir()
    ctx = AppContext.load(str(SMALL_HOME))
    kb = open_knowledge(ctx, lock_timeout=60)
    try:
        # English and Chinese "common" pages: a few thousand chunks, built once and cached.
        for folder in ("pages/common", "pages.zh/common"):
            kb.add_folder(corpus / folder)
        started = time.perf_counter()
        sync = kb.sync(sync_settings(ctx.config))
        print(f"  index: {sync.chunks_added} chunks added in "
              f"{time.perf_counter() - started:.1f} s; total {kb.stats()}", flush=True)
    finally:
        kb.close()
    return SMALL_HOME


def _memory_lines(count: int) -> list[str]:
    from bench.memory import import_lines

    data = json.loads(locomo_file().read_text(encoding="utf-8"))
    lines: list[str] = []
    for conversation in data:
        for line in import_lines(conversation):
            obj = json.loads(line)
            obj["type"] = "fact"
            lines.append(json.dumps(obj))
            if len(lines) >= count:
                return lines
    return lines


def run(quick: bool) -> Report:
    from assistant.context import AppContext
    from tests.fake_ollama import FakeOllamaServer

    report = Report("chat", quick)
    # Latency on a shared machine depends on what else runs: keep the load with the numbers.
    report.details["load_average_at_start"] = list(os.getloadavg())
    report.details["cpus"] = os.cpu_count()
    # What the user waits for against a CPU-realistic Ollama (needs no shared data).
    from bench.chat_session import run_session

    report.details["session"] = run_session(report, quick)
    try:
        questions = _questions(40 if quick else 200)
        tldr_dir()
    except MissingData as exc:  # the session's numbers stand on their own
        print(f"  engine overhead skipped: {exc}", flush=True)
        report.details["overhead_skipped"] = str(exc)
        return report
    fake = FakeOllamaServer().start()
    try:
        report.details["engine_only"] = asyncio.run(_engine_only(report, fake, questions))
    finally:
        fake.stop()
    home = _knowledge_home(quick)
    work = Path(tempfile.mkdtemp(prefix="bench-chat-"))
    fake = FakeOllamaServer().start()
    try:
        # A private copy of the config pointing at the fake server; data shared read-only.
        from assistant.shared_embedder import SingleFlightEmbedder

        ctx = AppContext.load(str(home))
        ctx.config.ollama.host = fake.url
        ctx.config.ollama.timeout = 10.0
        memory_ctx = AppContext.load(str(work))
        # One model for both, shared as Services shares it (concurrent queries merged).
        shared = SingleFlightEmbedder(ctx.embedder())
        ctx._embedder = memory_ctx._embedder = shared  # type: ignore[assignment]
        shared.embed_query("warm up")
        details = asyncio.run(_measure(report, ctx, memory_ctx, fake, questions))
        report.details.update(details)
        report.details["knowledge_home"] = str(home)
        report.details["load_average_at_end"] = list(os.getloadavg())
    finally:
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)
    return report


def _forget_queries(ctx: Any) -> None:
    """Empty the embedder's in-memory query memo, so every measurement embeds the question."""
    inner = getattr(ctx.embedder(), "_inner", None)
    memo = getattr(inner, "_queries", None)
    if memo is None:
        raise RuntimeError("the embedder has no query memo to reset; update bench/chat.py")
    memo.clear()


async def _engine_only(report: Report, fake: Any, questions: list[str]) -> dict[str, Any]:
    """The engine's own share: instant knowledge (6 chunk-sized excerpts) and memory (5)."""
    from assistant.chat.engine import ChatEngine, EngineSettings
    from assistant.llm.models import OllamaCatalog
    from assistant.sessions.store import SessionStore
    from tests.fixtures.chat import FakeKnowledge, FakeMemory, knowledge_item, memory_item

    text = "tar -xvf archive.tar extracts files verbosely from an archive. " * 16  # ~1 kB
    knowledge = FakeKnowledge(items=[knowledge_item(i, text) for i in range(1, 7)])
    memory = FakeMemory(items=[memory_item(i) for i in range(1, 6)])
    store = SessionStore.open(":memory:")
    engine = ChatEngine(
        EngineSettings(host=fake.url, model="qwen3:4b"), store, knowledge=knowledge,
        memory=memory, catalog=OllamaCatalog(fake.url, 10.0),
    )
    overheads: list[float] = []
    assembly: list[float] = []
    try:
        for question in questions[:3]:
            await engine.ask(question)
        for question in questions:
            engine.new_session()
            final = await engine.ask(question)
            assert final.turn is not None and final.turn.status == "complete", final
            overheads.append(float(final.turn.timings["overhead_ms"]))
            assembly.append(float(final.turn.timings["assembly_ms"]))
    finally:
        await engine.aclose()
        store.close()
    p95 = percentile(overheads, 95)
    report.add("engine_only_overhead_p95_ms", p95, unit="ms",
               notes="instant fake knowledge/memory: session, assembly, hand-off")
    return {"overhead_p50_ms": round(percentile(overheads, 50), 2),
            "overhead_p95_ms": round(p95, 2),
            "assembly_p95_ms": round(percentile(assembly, 95), 2)}


async def _measure(
    report: Report, ctx: Any, memory_ctx: Any, fake: Any, questions: list[str]
) -> dict[str, Any]:
    from assistant.chat.engine import ChatEngine, EngineSettings
    from assistant.chat.service import RetrieverKnowledge, ServiceMemory
    from assistant.llm.models import OllamaCatalog
    from assistant.memory.service import MemoryService
    from assistant.memory.transfer import import_memories
    from assistant.retrieval.open import close_retriever, open_retriever
    from assistant.sessions.store import SessionStore

    memory_service = MemoryService.open(memory_ctx)
    lines = _memory_lines(MEMORIES)
    added, errors = import_memories(memory_service.store, lines)
    assert not errors, errors[:3]
    print(f"  memories: {added.added} imported", flush=True)

    retriever = open_retriever(ctx, origin="bench")
    knowledge = RetrieverKnowledge(lambda: retriever)
    memory = ServiceMemory(lambda: memory_service)
    store = SessionStore.open(":memory:")
    settings = EngineSettings.from_config(ctx.config)
    engine = ChatEngine(
        settings, store, knowledge=knowledge, memory=memory,
        catalog=OllamaCatalog(settings.host, settings.timeout),
    )
    stages: dict[str, list[float]] = {
        k: [] for k in ("overhead_ms", "retrieval_ms", "recall_ms", "assembly_ms", "prepare_ms")
    }
    sequential: list[float] = []
    try:
        for warm in questions[:3]:  # model load, first Chroma query, llama-index import
            await engine.ask(warm)
            engine.new_session()
        for question in questions:
            engine.new_session()  # each question fresh: no history, as a first message
            _forget_queries(ctx)
            final = await engine.ask(question)
            turn = final.turn
            assert turn is not None and turn.status == "complete", final
            for key, values in stages.items():
                values.append(float(turn.timings.get(key, 0.0)))
            # Baseline: the same two lookups, one after the other, no engine, with the query
            # embedded again (the embedder's memo would otherwise make it free).
            _forget_queries(ctx)
            start = time.perf_counter()
            await asyncio.to_thread(knowledge.search, question, top_k=settings.top_k)
            await asyncio.to_thread(memory.recall, question, settings.memory_top_k)
            sequential.append((time.perf_counter() - start) * 1000)
    finally:
        await engine.aclose()
        close_retriever(retriever)
        memory_service.close()
        store.close()

    p95 = percentile(stages["overhead_ms"], 95)
    report.add(
        "overhead_p95_ms", p95, unit="ms",
        baseline=percentile(sequential, 95), baseline_name="retrieval then recall, no engine",
        target=f"<= {TARGET_MS:g} ms", passed=p95 <= TARGET_MS,
        notes=f"{len(questions)} questions (EN+ZH tldr), {MEMORIES} memories",
    )
    report.add("overhead_p50_ms", percentile(stages["overhead_ms"], 50), unit="ms")
    breakdown = {
        key: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)}
        for key, v in stages.items()
    }
    for key in ("retrieval_ms", "recall_ms", "assembly_ms"):
        report.add(f"{key[:-3]}_p95_ms", breakdown[key]["p95"], unit="ms")
    return {"breakdown_ms": breakdown, "questions": len(questions), "memories": MEMORIES,
            "sequential_p50_ms": round(percentile(sequential, 50), 2)}
