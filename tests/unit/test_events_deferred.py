"""Events are logged without their vectors (log_event stays a short write) and still found by
meaning: a search first embeds the few just logged; a backlog is found by its words meanwhile;
a process killed between the write and the embedding loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.context import AppContext
from assistant.events.model import EventType, NewEvent
from assistant.events.service import EMBED_BEFORE_SEARCH, EventService
from assistant.events.store import EventStore
from tests.fakes import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx(tmp_path: Path) -> AppContext:
    return AppContext.load(str(tmp_path / "home"))


def _service(ctx: AppContext, embedder: HashEmbedder) -> EventService:
    ctx.paths.ensure()
    return EventService(ctx, EventStore.open(ctx.paths.events_db), embedder)


def test_a_search_embeds_the_events_just_logged_first(ctx: AppContext) -> None:
    embedder = HashEmbedder()
    service = _service(ctx, embedder)
    try:
        logged = service.store.log(NewEvent(EventType.DECISION, "use bcrypt for password hashes"))
        assert not service.store.get(logged.id).embedded
        hits = service.search("bcrypt password hashes")
        assert hits[0].event.id == logged.id
        assert hits[0].cosine is not None and hits[0].cosine > 0.5  # found by meaning too
        assert service.store.get(logged.id).embedded
    finally:
        service.close()


def test_a_backlog_is_left_to_idle_work_and_found_by_words(ctx: AppContext) -> None:
    embedder = HashEmbedder()
    service = _service(ctx, embedder)
    try:
        service.store.log_many([NewEvent(EventType.ACTION, f"ran the tests, round {n}")
                                for n in range(EMBED_BEFORE_SEARCH + 1)])
        hits = service.search("ran the tests", top_k=100)
        assert embedder.texts_embedded == 0  # no search turns into a bulk job
        assert len(hits) == EMBED_BEFORE_SEARCH + 1
        assert all(h.keyword is not None and h.cosine is None for h in hits)
        assert service.embed_pending() == EMBED_BEFORE_SEARCH + 1
        hits = service.search("ran the tests", top_k=100)
        assert len(hits) == EMBED_BEFORE_SEARCH + 1 and all(h.cosine is not None for h in hits)
    finally:
        service.close()


def test_a_rare_word_finds_an_event_meaning_ranks_low(ctx: AppContext) -> None:
    embedder = HashEmbedder()
    service = _service(ctx, embedder)
    try:
        service.store.log_many([NewEvent(EventType.ACTION, f"ran the tests again, round {n}")
                                for n in range(120)])
        target = service.store.log(NewEvent(EventType.ERROR, "ERR_42 in the login handler"))
        service.embed_pending()
        hits = service.search("ran the tests ERR_42", top_k=5)
        assert target.id in [h.event.id for h in hits]
    finally:
        service.close()


def test_a_kill_between_log_and_embedding_loses_nothing(ctx: AppContext) -> None:
    ctx.paths.ensure()
    script = (
        "import os, signal, sys\n"
        "from assistant.events.model import EventType, NewEvent\n"
        "from assistant.events.store import EventStore\n"
        "store = EventStore.open(sys.argv[1])\n"
        "for n in range(3):\n"
        "    store.log(NewEvent(EventType.OBSERVATION, f'the cache layer leaks sockets {n}'))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(ctx.paths.events_db)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, timeout=120)
    assert done.returncode == -signal.SIGKILL
    service = _service(ctx, HashEmbedder())
    try:
        assert service.store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        hits = service.search("cache layer leaks sockets")
        assert sorted(h.event.text for h in hits) == [
            f"the cache layer leaks sockets {n}" for n in range(3)]
        assert all(h.cosine is not None for h in hits)
    finally:
        service.close()
