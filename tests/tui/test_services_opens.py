"""One composition root: a start-up and usage walk through every adapter of a CoreBackend opens
each store once, through the backend's one `Services`, and `close()` closes them all.

The real core (SQLite, Chroma, the memory store) with the fast HashEmbedder; no Ollama needed.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path

import pytest

from assistant.context import AppContext
from assistant.services import Services
from tests.fakes import HashEmbedder
from tui.backend import CoreBackend

ONCE = Counter({"knowledge_light": 1, "retriever": 1, "retrieval_log": 1, "memory": 1,
                "sessions": 1, "conversations": 1, "events": 1, "chat": 1, "link": 1})


def test_a_walk_through_every_adapter_opens_each_store_once(home: Path, tmp_path: Path) -> None:
    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tar.md").write_text("# Tar\n\nExtract with tar -xzf file.tgz\n", encoding="utf-8")
    backend = CoreBackend(ctx)
    try:
        # Start-up: the status bar's counts come before the index has loaded.
        assert backend.knowledge.stats() == (0, 0)
        assert backend.memory.count() == 0
        backend.ollama.server_name()
        backend.ollama.services.link()
        backend.knowledge.warm_up()
        # Usage: every screen's reads and writes, some of them twice.
        backend.knowledge.add_folder(notes)
        backend.knowledge.sync(None, rebuild=False, progress=lambda _: None)
        assert "tar" in backend.knowledge.search("extract tar").sources[0].text.lower()
        assert [f.files for f in backend.knowledge.folders()] == [1]
        backend.memory.add("I prefer short answers", "preference")
        assert len(backend.memory.list(all_active=True, type_=None, query="")) == 1
        backend.memory.changes(0, None)
        session = backend.sessions.create()
        assert [s.id for s in backend.sessions.list()] == [session.id]
        backend.sessions.search("tar")
        backend.sessions.search("short answers")
        assert backend.events.list() == []
        backend.events.version()
        # The chat from several workers at once: one engine.
        threads = [threading.Thread(target=backend.services.chat) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        chat = asyncio.run(backend.chat._open())
        assert chat is backend.services.peek_chat()
        # Removals erase in these same stores (erasure opens none of its own).
        backend.sessions.delete(session.id)
        assert backend.memory.forget_all() == 1
        backend.knowledge.remove_folder(str(notes))
        assert backend.knowledge.folders() == [] and backend.sessions.list() == []
        assert backend.services.opened == ONCE
        # The retriever logs to the one retrieval log, not a connection of its own.
        assert backend.services.retriever().log is backend.services.retrieval_log()
        # The conversation index reads the one session store, not a connection of its own.
        assert backend.services.conversations().store is backend.services.sessions()
    finally:
        asyncio.run(backend.chat.close())
        backend.close()
    # Everything was closed: the next use opens anew.
    backend.services.sessions()
    assert backend.services.opened["sessions"] == 2
    backend.close()


def test_close_closes_in_reverse_order_and_reaches_every_store(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    services = Services(ctx)
    closed: list[str] = []
    store = services.sessions()
    services.conversations()  # no close of its own: it reads the session store
    memory = services.memory()
    close_store = store.close

    def close_sessions() -> None:
        closed.append("sessions")
        close_store()

    def close_memory() -> None:
        closed.append("memory")
        raise OSError("disk gone")  # one failure must not stop the others

    monkeypatch.setattr(store, "close", close_sessions)
    monkeypatch.setattr(memory, "close", close_memory)
    services.close()
    assert closed == ["memory", "sessions"]


def test_the_retriever_appends_to_the_one_retrieval_log_which_close_closes(home: Path) -> None:
    import sqlite3

    from assistant.retrieval.log import RetrievalLog

    ctx = AppContext.load(str(home))
    ctx._embedder = HashEmbedder()
    services = Services(ctx)
    try:
        log = services.retriever().log
        assert isinstance(log, RetrievalLog) and log is services.retrieval_log()
        assert services.opened["retrieval_log"] == 1
    finally:
        services.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed: a closed database
        log.count()
    # `brain eval`: its searches are measurements, not logged; the log stays unopened.
    quiet = Services(ctx, log_searches=False)
    try:
        assert quiet.retriever().log is None
        assert "retrieval_log" not in quiet.opened
    finally:
        quiet.close()
