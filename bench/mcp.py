"""MCP benchmark: `brain mcp` measured through the official SDK's client over stdio.

- spawn → `initialize` answered, against `brain --help` in the same rounds (interleaved, fresh
  processes, medians): what an MCP client waits for when it launches the server;
- `search_knowledge` p50/p95 warm over the tldr corpus, against the same queries through
  `HybridRetriever.search` in this process — what `brain search --queries` runs per query —
  so the ratio is the protocol's overhead (JSON-RPC, schema checks, the store's thread);
- `log_event` throughput, one call after the other as an agent makes them (target >= 500/s);
- `query_events` p95 with 50,000 events in the log (5,000 quick), every one embedded, queries
  mixing meaning, types, time ranges and importance (target <= 50 ms).
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
LOG_TARGET = 500.0
QUERY_P95_TARGET_MS = 50.0
VERBS = ("ran", "edited", "read", "tested", "reverted", "profiled", "deployed", "reviewed")
THINGS = ("the login handler", "auth.py", "the cache layer", "the flaky CI job", "schema v4",
          "the search ranking", "the backup script", "the TUI layout", "the token check")
TYPES = ("action", "observation", "decision", "goal", "error", "note")


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


async def _open(home: Path, stack: Any) -> Any:
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=_brain(home, "mcp")[1:],
                                   env=_env(), cwd=str(ROOT))
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


def _fill_events(ctx: Any, count: int) -> int:
    """`count` synthetic events over 90 days, all embedded (the log as a long-used agent's)."""
    from assistant.events.model import EventType, NewEvent
    from assistant.events.service import EventService

    service = EventService.open(ctx)
    try:
        have = service.store.count()
        rng = random.Random(7)
        now = time.time()
        batch: list[NewEvent] = []
        for n in range(have, count):
            text = (f"{rng.choice(VERBS)} {rng.choice(THINGS)} while working on "
                    f"{rng.choice(THINGS)} (step {n})")
            batch.append(NewEvent(EventType(rng.choice(TYPES)), text,
                                  importance=round(rng.random(), 2), agent="bench",
                                  session=f"run-{n // 50}", ts=now - rng.random() * 90 * 86_400))
            if len(batch) == 1000:
                service.store.log_many(batch)
                batch = []
        if batch:
            service.store.log_many(batch)
        started = time.perf_counter()
        embedded = service.embed_pending()
        total = service.store.count()
        print(f"  events: {total} logged, {embedded} embedded in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        return total
    finally:
        service.close()


def _protocol(home: Path, queries: list[str], logs: int, event_queries: int
              ) -> dict[str, list[float]]:
    import anyio

    async def scenario() -> dict[str, list[float]]:
        from contextlib import AsyncExitStack

        out: dict[str, list[float]] = {"search": [], "log": [], "query_events": []}
        async with AsyncExitStack() as stack:
            session = await _open(home, stack)
            await session.call_tool("search_knowledge", {"query": "warm up"})
            for query in queries:
                started = time.perf_counter()
                result = await session.call_tool("search_knowledge", {"query": query})
                out["search"].append(time.perf_counter() - started)
                assert not result.is_error, result.content
            started = time.perf_counter()
            for n in range(logs):
                await session.call_tool("log_event", {
                    "type": "action", "text": f"bench step {n}", "session": "bench-log"})
            out["log"].append(time.perf_counter() - started)
            rng = random.Random(11)
            await session.call_tool("query_events", {"query": "warm up"})
            for n in range(event_queries):
                args: dict[str, Any] = {"query": f"{rng.choice(VERBS)} {rng.choice(THINGS)}"}
                if n % 3 == 1:
                    args["types"] = [rng.choice(TYPES)]
                if n % 3 == 2:
                    args |= {"since": "30d", "min_importance": 0.5}
                started = time.perf_counter()
                result = await session.call_tool("query_events", args)
                out["query_events"].append(time.perf_counter() - started)
                assert not result.is_error, result.content
        return out

    return anyio.run(scenario)


def _in_process(ctx: Any, queries: list[str]) -> list[float]:
    from assistant.retrieval.open import close_retriever, open_retriever

    retriever = open_retriever(ctx, origin="eval", log=False)
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


def _events_in_process(ctx: Any, logs: int, event_queries: int) -> tuple[float, list[float]]:
    """The same writes and queries straight on EventService: the baseline of both tools."""
    from assistant.events.matrix import Filters
    from assistant.events.model import EventType, NewEvent
    from assistant.events.service import EventService
    from assistant.timerange import local_now, parse_bound

    service = EventService.open(ctx)
    try:
        started = time.perf_counter()
        for n in range(logs):
            service.store.log(NewEvent(EventType.ACTION, f"bench step {n}", agent="bench",
                                       session="bench-log-base"))
        rate = logs / (time.perf_counter() - started)
        rng = random.Random(11)
        service.search("warm up")
        times = []
        for n in range(event_queries):
            query = f"{rng.choice(VERBS)} {rng.choice(THINGS)}"
            filters = Filters()
            if n % 3 == 1:
                filters = Filters(types=(EventType(rng.choice(TYPES)),))
            if n % 3 == 2:
                since = parse_bound("30d", local_now(), end=False).timestamp()
                filters = Filters(since=since, min_importance=0.5)
            started = time.perf_counter()
            service.search(query, filters=filters)
            times.append(time.perf_counter() - started)
        return rate, times
    finally:
        service.close()


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
    events = 5_000 if quick else 50_000
    in_log = _fill_events(ctx, events)  # at least `events` (earlier runs' log_event calls too)
    logs = 500 if quick else 2_000
    measured = _protocol(home, queries, logs, 30 if quick else 100)
    baseline = _in_process(ctx, queries)
    base_rate, base_queries = _events_in_process(ctx, logs, 30 if quick else 100)
    mcp_p95 = percentile(measured["search"], 95) * 1000
    base_p95 = percentile(baseline, 95) * 1000
    report.add("search_knowledge_p50_ms", percentile(measured["search"], 50) * 1000, unit="ms",
               baseline=percentile(baseline, 50) * 1000,
               baseline_name="retriever.search in process (brain search --queries)")
    report.add("search_knowledge_p95_ms", mcp_p95, unit="ms", baseline=base_p95,
               baseline_name="retriever.search in process (brain search --queries)")
    rate = logs / measured["log"][0]
    report.add("log_event_per_s", rate, unit="events/s", target=f">= {LOG_TARGET:.0f}/s",
               passed=rate >= LOG_TARGET, notes="sequential calls over stdio",
               baseline=base_rate, baseline_name="EventStore.log in process")
    p95 = percentile(measured["query_events"], 95) * 1000
    report.add(f"query_events_p95_ms_at_{events // 1000}k", p95, unit="ms",
               target=f"<= {QUERY_P95_TARGET_MS:.0f} ms", passed=p95 <= QUERY_P95_TARGET_MS,
               baseline=percentile(base_queries, 95) * 1000,
               baseline_name="EventService.search in process")
    report.details.update({"load_avg": os.getloadavg(), "queries": len(queries),
                           "events": in_log, "logged": logs})
    return report
