"""MCP benchmark: `brain mcp` measured through the official SDK's client over stdio.

- spawn → `initialize` answered, against `brain --help` in the same rounds (interleaved, fresh
  processes, medians): what an MCP client waits for when it launches the server;
- `search_knowledge` p50/p95 warm over the tldr corpus, against the same queries through
  `HybridRetriever.search` in this process — what `brain search --queries` runs per query —
  so the ratio is the protocol's overhead (JSON-RPC, schema checks, the store's thread);
- `log_event` throughput, one call after the other as an agent makes them (target >= 500/s);
- `query_events` p95 with 50,000 events in the log, every one embedded, queries mixing
  meaning, types, time ranges and importance (target <= 50 ms), against the same searches on
  `EventService` in a process of their own.

The event log lives in a home of its own, built once and reused, whose server runs with the
scale bench's stand-in encoder (`bench.scale_standin`: the real CLI, only the model's
arithmetic replaced): embedding 50,000 events with the real model takes hours on this shared
2-core machine. The latency is the product's own (SQLite, FTS5, the vector matrix, the SDK);
only the query's embedding, a few ms with the real model, is not in it. Results say so.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import DATA_DIR, RESULTS_DIR, ROOT, MissingData, Report, percentile, tldr_dir

TMP = RESULTS_DIR / "tmp"
HOME = TMP / "mcp-home"
EVENTS_HOME = TMP / "mcp-events"
EVENTS = 50_000
STANDIN = "bench.scale_standin"
LOG_TARGET = 500.0
QUERY_P95_TARGET_MS = 50.0



def _home(quick: bool) -> tuple[Any, Path]:
    """The bench home with tldr indexed (pages/linux when quick); embeddings stay cached."""
    from assistant.context import AppContext
    from assistant.knowledge_service import open_knowledge, sync_settings

    corpus = tldr_dir()
    home = HOME.with_name(HOME.name + ("-quick" if quick else ""))
    ctx = AppContext.load(str(home))
    kb = open_knowledge(ctx, lock_timeout=60)
    try:
        for folder in (("pages/linux",) if quick else ("pages", "pages.zh")):
            if (corpus / folder).is_dir():
                kb.add_folder(corpus / folder)
        started = time.perf_counter()
        sync = kb.sync(sync_settings(ctx.config))
        print(f"  index: {sync.chunks_added} chunks added, {time.perf_counter() - started:.1f} "
              f"s; total {kb.stats()}", flush=True)
    finally:
        kb.close()
    return ctx, home


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    return env


def _brain(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "assistant.cli.main", "--home", str(home), *args]


async def _open(home: Path, stack: Any, *, standin: bool = False) -> Any:
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    args = _brain(home, "mcp")[1:]
    if standin:
        args = ["-m", STANDIN, "--home", str(home), "mcp"]
    params = StdioServerParameters(command=sys.executable, args=args, env=_env(), cwd=str(ROOT))
    read, write = await stack.enter_async_context(stdio_client(params))
    session = await stack.enter_async_context(ClientSession(
        read, write, client_info=types.Implementation(name="bench", version="1")))
    await session.initialize()
    return session


def _time_initialize(home: Path) -> float:
    import anyio

    async def once() -> float:
        from contextlib import AsyncExitStack

        started = time.perf_counter()
        async with AsyncExitStack() as stack:
            await _open(home, stack)
            return time.perf_counter() - started

    return anyio.run(once)


def _time_help(home: Path) -> float:
    started = time.perf_counter()
    subprocess.run(_brain(home, "--help"), env=_env(), capture_output=True, check=True)
    return time.perf_counter() - started


def _queries(limit: int) -> list[str]:
    path = DATA_DIR / "tldr_golden.jsonl"
    if not path.is_file():
        raise MissingData(f"{path} not found")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [r["query"] for r in rows if r.get("lang") == "en"][:limit]


def _protocol(home: Path, queries: list[str]) -> list[float]:
    """search_knowledge times through the SDK's client, warm."""
    import anyio

    async def scenario() -> list[float]:
        from contextlib import AsyncExitStack

        times = []
        async with AsyncExitStack() as stack:
            session = await _open(home, stack)
            await session.call_tool("search_knowledge", {"query": "warm up"})
            for query in queries:
                started = time.perf_counter()
                result = await session.call_tool("search_knowledge", {"query": query})
                times.append(time.perf_counter() - started)
                assert not result.is_error, result.content
        return times

    return anyio.run(scenario)


def _event_protocol(home: Path, logs: int, event_queries: int) -> tuple[float, list[float]]:
    """log_event throughput (sequential calls) and query_events times through the client."""
    import anyio

    from bench.mcp_events import event_query

    async def scenario() -> tuple[float, list[float]]:
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as stack:
            session = await _open(home, stack, standin=True)
            await session.call_tool("log_event", {"type": "note", "text": "warm up"})
            started = time.perf_counter()
            for n in range(logs):
                await session.call_tool("log_event", {
                    "type": "action", "text": f"bench step {n}", "session": "bench-log"})
            rate = logs / (time.perf_counter() - started)
            rng = random.Random(11)
            await session.call_tool("query_events", {"query": "warm up"})
            times = []
            for n in range(event_queries):
                query, types, since, min_importance = event_query(rng, n)
                args: dict[str, Any] = {"query": query}
                if types:
                    args["types"] = list(types)
                if since:
                    args |= {"since": since, "min_importance": min_importance}
                started = time.perf_counter()
                result = await session.call_tool("query_events", args)
                times.append(time.perf_counter() - started)
                assert not result.is_error, result.content
        return rate, times

    return anyio.run(scenario)


def _events_subprocess(mode: str, *args: int) -> dict[str, Any]:
    """bench/mcp_events.py in a process of its own (the stand-in encoder stays out of this
    one, whose in-process knowledge baseline uses the real model)."""
    done = subprocess.run([sys.executable, "-m", "bench.mcp_events", mode, str(EVENTS_HOME),
                           *map(str, args)], env=_env(), cwd=str(ROOT), check=True,
                          stdout=subprocess.PIPE, text=True)
    lines = done.stdout.rstrip().splitlines()
    for line in lines[:-1]:
        print(line, flush=True)
    return dict(json.loads(lines[-1]))


def _in_process(ctx: Any, queries: list[str]) -> list[float]:
    from assistant.retrieval.open import close_retriever, open_retriever

    retriever = open_retriever(ctx, origin="eval")
    try:
        retriever.search("warm up", log=False)
        times = []
        for query in queries:
            started = time.perf_counter()
            retriever.search(query, log=False)
            times.append(time.perf_counter() - started)
        return times
    finally:
        close_retriever(retriever)


def run(quick: bool) -> Report:
    report = Report("mcp", quick)
    ctx, home = _home(quick)
    rounds = 3 if quick else 7
    inits, helps = [], []
    _time_help(home)  # files into the OS cache, bytecode written
    _time_initialize(home)
    for _ in range(rounds):
        helps.append(_time_help(home))
        inits.append(_time_initialize(home))
    init_s, help_s = statistics.median(inits), statistics.median(helps)
    report.add("spawn_to_initialize_s", init_s, unit="s", baseline=help_s,
               baseline_name="brain --help", target="< 1 s",
               passed=init_s < 1.0, notes=f"medians of {rounds}; load {os.getloadavg()[0]:.1f}")

    queries = _queries(20 if quick else 60)
    filled = _events_subprocess("fill", EVENTS)  # at least EVENTS (earlier runs' calls too)
    logs, event_queries = (500, 30) if quick else (2_000, 100)
    measured = _protocol(home, queries)
    rate, query_times = _event_protocol(EVENTS_HOME, logs, event_queries)
    baseline = _in_process(ctx, queries)
    base = _events_subprocess("baseline", logs, event_queries)
    mcp_p95 = percentile(measured, 95) * 1000
    base_p95 = percentile(baseline, 95) * 1000
    report.add("search_knowledge_p50_ms", percentile(measured, 50) * 1000, unit="ms",
               baseline=percentile(baseline, 50) * 1000,
               baseline_name="retriever.search in process (brain search --queries)")
    report.add("search_knowledge_p95_ms", mcp_p95, unit="ms", baseline=base_p95,
               baseline_name="retriever.search in process (brain search --queries)")
    report.add("log_event_per_s", rate, unit="events/s", target=f">= {LOG_TARGET:.0f}/s",
               passed=rate >= LOG_TARGET,
               notes=f"sequential calls over stdio; load {os.getloadavg()[0]:.1f}",
               baseline=float(base["rate"]), baseline_name="EventStore.log in process")
    p95 = percentile(query_times, 95) * 1000
    report.add(f"query_events_p95_ms_at_{EVENTS // 1000}k", p95, unit="ms",
               target=f"<= {QUERY_P95_TARGET_MS:.0f} ms", passed=p95 <= QUERY_P95_TARGET_MS,
               baseline=percentile(base["times"], 95) * 1000,
               baseline_name="EventService.search in process",
               notes="stand-in encoder (bench.scale_standin); "
                     f"load {os.getloadavg()[0]:.1f}")
    report.details.update({"load_avg": os.getloadavg(), "queries": len(queries),
                           "events": filled["events"], "logged": logs,
                           "query_events_p50_ms": percentile(query_times, 50) * 1000,
                           "events_encoder": "stand-in (bench.scale_standin)"})
    return report
