"""The MCP benchmark's event log, in a process of its own with the stand-in encoder.

`python -m bench.mcp_events fill HOME COUNT`: at least COUNT synthetic events over 90 days in
HOME, every one embedded (the log of a long-used agent); built once, the home is reused.
`python -m bench.mcp_events baseline HOME LOGS QUERIES`: the bench's writes and queries
straight on `EventService`, the in-process baseline of `log_event` and `query_events`.
Each prints one JSON line last.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

VERBS = ("ran", "edited", "read", "tested", "reverted", "profiled", "deployed", "reviewed")
THINGS = ("the login handler", "auth.py", "the cache layer", "the flaky CI job", "schema v4",
          "the search ranking", "the backup script", "the TUI layout", "the token check")
TYPES = ("action", "observation", "decision", "goal", "error", "note")


def event_query(rng: random.Random, n: int) -> tuple[str, tuple[str, ...], str | None, float]:
    """The n-th query of the mix: (query, types, since, min_importance)."""
    query = f"{rng.choice(VERBS)} {rng.choice(THINGS)}"
    if n % 3 == 1:
        return query, (rng.choice(TYPES),), None, 0.0
    if n % 3 == 2:
        return query, (), "30d", 0.5
    return query, (), None, 0.0


def _service(home: str) -> Any:
    from bench.scale_standin import install

    install()
    from assistant.context import AppContext
    from assistant.events.service import EventService

    return EventService.open(AppContext.load(home))


def fill(home: str, count: int) -> dict[str, Any]:
    from assistant.events.model import EventType, NewEvent

    service = _service(home)
    try:
        have = service.store.count()
        rng = random.Random(7)
        now = time.time()
        started = time.perf_counter()
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
        logged = time.perf_counter() - started
        started = time.perf_counter()
        embedded = service.embed_pending()
        total = service.store.count()
        print(f"  events: {total} in the log ({max(count - have, 0)} logged in {logged:.1f} s, "
              f"{embedded} embedded by the stand-in in {time.perf_counter() - started:.1f} s)",
              flush=True)
        return {"events": total}
    finally:
        service.close()


def baseline(home: str, logs: int, queries: int) -> dict[str, Any]:
    from assistant.events.matrix import Filters
    from assistant.events.model import EventType, NewEvent
    from assistant.timeflags import parse_bound
    from assistant.timerange import local_now

    service = _service(home)
    try:
        started = time.perf_counter()
        for n in range(logs):
            service.store.log(NewEvent(EventType.ACTION, f"bench step {n}", agent="bench",
                                       session="bench-log-base"))
        rate = logs / (time.perf_counter() - started)
        rng = random.Random(11)
        service.search("warm up")
        times = []
        for n in range(queries):
            query, types, since, min_importance = event_query(rng, n)
            filters = Filters(
                types=tuple(EventType(t) for t in types), min_importance=min_importance,
                since=parse_bound(since, local_now(), end=False).timestamp() if since else None)
            started = time.perf_counter()
            service.search(query, filters=filters)
            times.append(time.perf_counter() - started)
        return {"rate": rate, "times": times}
    finally:
        service.close()


def main(argv: list[str]) -> int:
    mode, home, *numbers = argv
    values = [int(n) for n in numbers]
    result = fill(home, *values) if mode == "fill" else baseline(home, *values)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
