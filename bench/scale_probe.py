"""`python -m bench.scale_probe HOME QUERIES.json real|standin`: search latencies in one process.

Run by bench/scale.py in a fresh child (so its RSS is a search process's own): knowledge search
as `brain search` runs it, conversation search as `brain sessions search --queries` runs it
(the index synced first, as that command does), memory search as `brain memory search` runs
it, memory recall as a chat turn runs it, and, on the same data in the same process, a bare
Chroma query (the query vector given, top 10) and a bare FTS5 query (the query's tokens OR'ed,
top 10 by rank). Prints one JSON line of (p50, p95) in ms.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _percentiles(fn: Callable[[str], object], queries: list[str]) -> tuple[float, float]:
    for query in queries[:3]:  # warm: the model and the stores are open for the real timing
        fn(query)
    times = []
    for query in queries:
        started = time.perf_counter()
        fn(query)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.95))]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str]) -> int:
    home, queries_file, mode = Path(argv[0]), Path(argv[1]), argv[2]
    if mode == "standin":
        from bench.scale_standin import install

        install()
    from assistant.context import AppContext
    from assistant.memory.service import MemoryService
    from assistant.retrieval.dated import search_dated
    from assistant.retrieval.log import RetrievalLog
    from assistant.retrieval.open import close_retriever, open_retriever
    from assistant.timerange import local_now
    from indexing.knowledge_types import META_COLLECTION
    from indexing.tokenize import query_tokens

    queries = json.loads(queries_file.read_text(encoding="utf-8"))
    ctx = AppContext.load(str(home))
    now = local_now()
    out: dict[str, Any] = {}
    # Logged, as `brain search` logs: the append is part of a search's time.
    with RetrievalLog.open(ctx.paths.retrieval_log_db) as log:
        retriever = open_retriever(ctx, origin="cli", log=log)
        try:
            out["knowledge"] = _percentiles(
                lambda q: search_dated(retriever, q, now=now, explicit=None, phrases=True,
                                       top_k=None, in_path=None), queries["knowledge"])
        finally:
            close_retriever(retriever)
    embedder = ctx.embedder()
    db = sqlite3.connect(ctx.paths.knowledge_db)
    collection_name = db.execute("SELECT value FROM meta WHERE key = ?",
                                 (META_COLLECTION,)).fetchone()[0]
    from indexing.chroma_clients import shared_client

    # The product's own client (Chroma refuses a second one with other settings in a process).
    collection = shared_client(ctx.paths.vectors_dir).get_collection(collection_name)
    out["chroma"] = _percentiles(
        lambda q: collection.query(query_embeddings=[embedder.embed_query(q).tolist()],
                                   n_results=10), queries["knowledge"])

    def fts(query: str) -> object:
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in query_tokens(query))
        return db.execute("SELECT rowid FROM chunk_fts WHERE chunk_fts MATCH ? ORDER BY rank "
                          "LIMIT 10", (match,)).fetchall() if match else []

    out["fts"] = _percentiles(fts, queries["knowledge"])
    from assistant.conversations.search import search_conversations
    from assistant.services import Services

    with Services(ctx) as core:
        index = core.conversations()
        index.sync()
        out["conversation"] = _percentiles(
            lambda q: search_conversations(index, q, now=now), queries["conversation"])
    service = MemoryService.open(ctx, eager_vectors=False)
    try:
        out["memory"] = _percentiles(lambda q: service.search(q, None), queries["memory"])
        # What a chat turn runs: the search plus the pinned memories and sure profile facts.
        out["recall"] = _percentiles(lambda q: service.recall(q), queries["memory"])
    finally:
        service.close()
    import resource

    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    time.sleep(1.0)  # idle: what the process holds once no search runs
    out["idle_rss_mb"] = _rss_mb()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
