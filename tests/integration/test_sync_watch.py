"""Live sync with `FolderWatcher`: changes show up, deletions disappear, stop is prompt."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from indexing.sync import SyncReport
from indexing.watch import FolderWatcher
from tests.fixtures.knowledge import index_state, note_text
from tests.waiting import wait_until


@pytest.fixture
def watching(knowledge) -> Iterator[tuple]:
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    knowledge.write("first.md", note_text("first"))
    kb.sync(knowledge.settings())
    reports: list[SyncReport] = []
    errors: list[BaseException] = []
    watcher = FolderWatcher(
        kb,
        knowledge.settings(),
        debounce_ms=100,
        on_report=reports.append,
        on_error=errors.append,
        ignore_paths=[knowledge.base],
    )
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    yield kb, reports, errors, watcher
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive(), "the watcher must stop promptly when asked"
    assert errors == []


def _sources(kb) -> set[str]:
    return set(kb.manifest.files())


def test_new_changed_and_deleted_files_are_synced_live(knowledge, watching) -> None:
    kb, reports, _errors, _watcher = watching
    path = knowledge.notes / "live.md"
    path.write_text("# Live\n\nThe zanzibar protocol keeps sockets alive.\n")
    wait_until(lambda: str(path) in _sources(kb), what="a new file to be indexed")
    assert kb.keyword_search("zanzibar", 3)

    path.write_text("# Live\n\nNow it is about the okavango delta instead.\n")
    wait_until(lambda: bool(kb.keyword_search("okavango", 3)), what="the edit to be indexed")
    assert not kb.keyword_search("zanzibar", 3)

    path.unlink()
    wait_until(lambda: str(path) not in _sources(kb), what="the deletion to be synced")
    assert not kb.keyword_search("okavango", 3)
    assert reports and all(isinstance(r, SyncReport) for r in reports)
    index_state(kb).assert_consistent()


def test_a_burst_of_changes_is_one_debounced_sync(knowledge, watching) -> None:
    kb, reports, _errors, _watcher = watching
    probe = knowledge.notes / "probe.md"
    deadline = time.monotonic() + 15
    while str(probe) not in _sources(kb) and time.monotonic() < deadline:
        probe.write_text(note_text("probe"))
        time.sleep(0.2)
    assert str(probe) in _sources(kb)
    wait_until(lambda: bool(reports), what="a report")
    settled = len(reports)
    for i in range(20):
        knowledge.write(f"burst/{i}.md", note_text(f"burst {i}", 1))
    wait_until(lambda: len(kb.manifest.files()) == 22, what="all 20 burst files")
    # 20 files written within a few ms: one or two syncs, not twenty.
    assert len(reports) - settled <= 3


def test_changes_made_before_the_watch_starts_are_caught_up(knowledge) -> None:
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    knowledge.write("first.md", note_text("first"))
    kb.sync(knowledge.settings())
    # Written once, while nothing watches: no OS event will ever report it.
    missed = knowledge.write("missed.md", "# Missed\n\nThe quokka notes were written offline.\n")
    watcher = FolderWatcher(kb, knowledge.settings(), debounce_ms=100,
                            ignore_paths=[knowledge.base])
    stop = threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
    thread.start()
    try:
        wait_until(lambda: str(missed) in _sources(kb), what="the catch-up sync")
        assert kb.keyword_search("quokka", 3)
    finally:
        stop.set()
        thread.join(timeout=10)
    index_state(kb).assert_consistent()
