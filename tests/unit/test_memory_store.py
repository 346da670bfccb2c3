"""MemoryStore: history, undo, supersede, versions, notifications, forget-all on disk."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from assistant.errors import UserError
from assistant.memory.model import Actor, Event, MemoryStatus, MemoryType, NewMemory
from assistant.memory.store import (
    SCHEMA_VERSION,
    AlreadyImported,
    ConcurrentChange,
    ImportConflict,
    MemoryNotFound,
    MemoryStore,
    NothingToUndo,
    SecretRejected,
)
from tests.fakes import HashEmbedder
from tests.fixtures.memory import MemoryVectors


def test_add_assigns_short_unique_ids_and_prefixes_resolve(memory_store: MemoryStore) -> None:
    ids = {memory_store.add(NewMemory(f"The user owns bike number {i}")).id for i in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 8 and int(i, 16) >= 0 for i in ids)
    some = sorted(ids)[0]
    assert memory_store.get(some[:8].upper()).id == some
    with pytest.raises(MemoryNotFound):
        memory_store.get("zzzz")
    with pytest.raises(MemoryNotFound, match="empty"):
        memory_store.get(" ")
    first_chars = [i[0] for i in ids]
    shared = next(c for c in first_chars if first_chars.count(c) > 1)  # 50 ids, 16 chars
    with pytest.raises(UserError, match="matches several"):
        memory_store.get(shared)


def test_timestamps_are_unix_seconds_from_the_clock(memory_store: MemoryStore,
                                                    fake_clock) -> None:
    memory = memory_store.add(NewMemory("The user lives in Lisbon"))
    noon = datetime(2025, 1, 1, 12, 0, tzinfo=UTC).timestamp()
    assert memory.created_at == noon == memory.updated_at
    fake_clock.advance(days=3, seconds=0.25)  # stored as the clock says, below a second too
    edited = memory_store.edit(memory.id, "The user lives in Porto")
    assert edited.updated_at == noon + 3 * 86400 + 0.25
    assert edited.created_at == memory.created_at
    assert memory_store.history(memory.id)[-1].at == edited.updated_at
    # Shown and exported as before: ISO-8601 UTC, whole seconds.
    assert edited.to_json()["updated_at"] == "2025-01-04T12:00:00Z"
    types = memory_store.conn.execute(
        "SELECT typeof(created_at), typeof(updated_at) FROM memories").fetchall()
    assert [tuple(t) for t in types] == [("real", "real")]


def test_edit_history_and_repeated_undo(memory_store: MemoryStore) -> None:
    m = memory_store.add(NewMemory("The user drinks tea", type=MemoryType.PREFERENCE))
    memory_store.edit(m.id, "The user drinks green tea")
    memory_store.edit(m.id, "The user drinks coffee")
    events = memory_store.history(m.id)
    assert [e.event for e in events] == [Event.ADD, Event.EDIT_BY_USER, Event.EDIT_BY_USER]
    assert events[2].old_text == "The user drinks green tea"
    assert events[2].new_text == "The user drinks coffee"
    assert events[1].actor is Actor.USER
    assert memory_store.undo(m.id).text == "The user drinks green tea"
    assert memory_store.undo(m.id).text == "The user drinks tea"
    # Undoing the add removes it (kept as deleted, visible in history).
    assert memory_store.undo(m.id).status is MemoryStatus.DELETED
    with pytest.raises(NothingToUndo):
        memory_store.undo(m.id)
    assert [e.event for e in memory_store.history(m.id)][-1] is Event.DELETE


def test_delete_and_undo_restores_search(memory_store: MemoryStore, memory_vectors) -> None:
    m = memory_store.add(NewMemory("The user plays the cello on Sundays"))
    assert m.id in memory_vectors.data
    memory_store.delete(m.id)
    assert memory_store.list() == []
    assert memory_store.keyword_candidates("cello", 5) == []
    memory_store.sync_vectors()
    assert m.id not in memory_vectors.data
    with pytest.raises(UserError, match="already deleted"):
        memory_store.delete(m.id)
    restored = memory_store.undo(m.id)
    assert restored.status is MemoryStatus.ACTIVE
    assert [i for i, _ in memory_store.keyword_candidates("cello", 5)] == [m.id]
    assert m.id in memory_vectors.data


def test_supersede_links_and_undo_brings_back_the_old(memory_store: MemoryStore) -> None:
    old = memory_store.add(NewMemory("The user works at Acme", key="employer"))
    new = memory_store.supersede(old.id, NewMemory("The user works at Globex", key="employer",
                                                   evidence=("I moved to Globex",)))
    old_now = memory_store.get(old.id)
    assert old_now.status is MemoryStatus.SUPERSEDED and old_now.superseded_by == new.id
    assert [m.id for m in memory_store.list()] == [new.id]
    assert len(memory_store.list(statuses=None)) == 2  # nothing silently deleted
    memory_store.undo(new.id)
    assert memory_store.get(old.id).status is MemoryStatus.ACTIVE
    assert memory_store.get(new.id).status is MemoryStatus.DELETED


def test_version_check_refuses_stale_writes(memory_store: MemoryStore) -> None:
    m = memory_store.add(NewMemory("The user uses vim"))
    memory_store.edit(m.id, "The user uses neovim")
    with pytest.raises(ConcurrentChange):
        memory_store.edit(m.id, "The user uses emacs", actor=Actor.ASSISTANT,
                          expected_version=m.version, evidence=("I use emacs",))
    with pytest.raises(ConcurrentChange):
        memory_store.supersede(m.id, NewMemory("The user uses emacs", evidence=("emacs",)),
                               expected_version=m.version)
    assert memory_store.get(m.id).text == "The user uses neovim"


def test_pin_and_unpin_are_logged(memory_store: MemoryStore) -> None:
    m = memory_store.add(NewMemory("The user is allergic to peanuts"))
    assert memory_store.pin(m.id).pinned
    assert not memory_store.pin(m.id, False).pinned
    assert [e.event for e in memory_store.history(m.id)][1:] == [Event.PIN, Event.UNPIN]
    assert memory_store.undo(m.id).pinned


def test_secrets_and_empty_text_are_refused(memory_store: MemoryStore) -> None:
    with pytest.raises(SecretRejected, match="secret"):
        memory_store.add(NewMemory("my openai key sk-proj-abcdefghijklmnopqrstuvwx1234"))
    with pytest.raises(UserError, match="needs some text"):
        memory_store.add(NewMemory("   "))
    m = memory_store.add(NewMemory("The user likes hiking"))
    with pytest.raises(SecretRejected):
        memory_store.edit(m.id, "my password is hunter22")
    assert memory_store.count(None) == 1


def test_change_notifications(memory_store: MemoryStore) -> None:
    seen: list[int] = []
    unsubscribe = memory_store.subscribe(lambda: seen.append(1))
    before = memory_store.change_count()
    m = memory_store.add(NewMemory("The user runs marathons"))
    memory_store.pin(m.id)
    assert len(seen) >= 2 and memory_store.change_count() > before
    unsubscribe()
    memory_store.delete(m.id)
    count = len(seen)
    memory_store.undo(m.id)
    assert len(seen) == count


def test_change_count_sees_other_processes(tmp_path: Path, memory_store: MemoryStore) -> None:
    memory_store.add(NewMemory("The user collects stamps"))
    before = memory_store.change_count()
    other = sqlite3.connect(memory_store.db_path)
    other.execute("UPDATE memories SET use_count = use_count + 1")
    other.commit()
    other.close()
    assert memory_store.change_count() != before


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(UserError, match="newer"):
        MemoryStore(db, embedder=HashEmbedder, vectors=MemoryVectors)


def test_vectors_rebuild_from_sqlite(memory_store: MemoryStore, memory_vectors) -> None:
    a = memory_store.add(NewMemory("The user has two cats"))
    b = memory_store.add(NewMemory("The user speaks Portuguese"))
    memory_store.delete(b.id)
    memory_vectors.data.clear()
    memory_vectors.data["ghost"] = memory_vectors.data.get(a.id, None) or __import__(
        "numpy").zeros(128, dtype="float32")
    assert memory_store.rebuild_vectors() == 1
    assert set(memory_vectors.data) == {a.id}


def _scan(paths: list[Path], marker: bytes) -> list[Path]:
    found = []
    for root in paths:
        for path in [root] if root.is_file() else root.rglob("*"):
            if path.is_file() and marker in path.read_bytes():
                found.append(path)
    return found


def test_forget_all_leaves_nothing_on_disk(memory_store: MemoryStore, memory_vectors) -> None:
    marker = "zebracornflake"
    for i in range(40):
        m = memory_store.add(NewMemory(f"The user's {marker} number {i} is important"))
        memory_store.edit(m.id, f"The user's {marker} item {i} changed")
    memory_store.delete(m.id)
    memory_store.set_profile(f"Loves {marker}", actor=Actor.USER)
    run = memory_store.begin_import("f" * 64, name=f"/home/u/{marker}.jsonl", total=1)
    memory_store.add_many([NewMemory(f"Imported {marker}")], run=run)
    assert _scan([memory_store.db_path.parent], marker.encode())
    assert memory_store.forget_all() == 41
    assert memory_store.import_runs() == []
    assert memory_store.count(None) == 0 and memory_vectors.count() == 0
    assert memory_store.profile().text == ""
    assert memory_store.keyword_candidates(marker, 5) == []
    assert _scan([memory_store.db_path.parent], marker.encode()) == []
    # Still usable afterwards.
    again = memory_store.add(NewMemory("The user started over"))
    assert [i for i, _ in memory_store.keyword_candidates("started", 3)] == [again.id]


def test_concurrent_user_edit_during_extraction_wins(memory_store: MemoryStore) -> None:
    """The user edits a memory while the (slow) model call of an extraction is running."""
    from assistant.memory.service import MemoryService

    old = memory_store.add(NewMemory("The user works at Acme", key="employer"))
    service = MemoryService(memory_store)
    model_called = threading.Event()
    user_done = threading.Event()

    def slow_model(messages, schema):
        model_called.set()
        assert user_done.wait(10)
        return ('{"memories": [{"type": "fact", "key": "employer", "text": "The user works '
                'at Initech", "confidence": 0.9, "importance": 0.6}, {"type": "fact", "key": '
                '"home_city", "text": "The user lives in Oslo", "confidence": 0.9, '
                '"importance": 0.5}]}')

    results = []
    worker = threading.Thread(target=lambda: results.append(
        service.extract(["I moved to Initech, and I live in Oslo"], chat_fn=slow_model)))
    worker.start()
    assert model_called.wait(10)
    memory_store.edit(old.id, "The user works at Acme Research")
    user_done.set()
    worker.join(10)
    outcome = results[0]
    assert memory_store.get(old.id).text == "The user works at Acme Research"
    assert memory_store.get(old.id).status is MemoryStatus.ACTIVE
    assert ("The user works at Initech", "changed by the user meanwhile") in outcome.skipped
    assert [m.text for m in outcome.added] == ["The user lives in Oslo"]
    assert not any("Initech" in m.text for m in memory_store.list(statuses=None))


def _items(n: int) -> list[NewMemory]:
    return [NewMemory(f"The user owns lamp number {i}") for i in range(n)]


def test_import_progress_commits_with_each_batch(memory_store: MemoryStore,
                                                 memory_vectors: MemoryVectors) -> None:
    """Whatever fails after a batch's commit, (memories, committed count) stay a matching pair."""
    items = _items(10)
    run = memory_store.begin_import("a" * 64, name="lamps.jsonl", total=10)
    real_upsert = memory_vectors.upsert
    calls = []

    def dies_on_second(*args, **kwargs) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the kill: after batch 2 committed, before its vectors
        real_upsert(*args, **kwargs)

    memory_vectors.upsert = dies_on_second  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        memory_store.add_many(items, batch_size=4, run=run)
    memory_vectors.upsert = real_upsert  # type: ignore[method-assign]
    [stored] = memory_store.import_runs()
    assert stored.committed == 8 == memory_store.count() and not stored.finished
    assert memory_vectors.count() == 4  # batch 2's vectors are missing for now

    resumed = memory_store.begin_import("a" * 64, name="lamps.jsonl", total=10)
    assert resumed.id == run.id and resumed.committed == 8
    report = memory_store.add_many(items, batch_size=4, run=resumed)
    assert (report.added, report.already_stored, report.skipped_duplicates) == (2, 8, 0)
    assert memory_store.sync_vectors() == 4  # the kill's missing vectors are repaired
    assert sorted(m.text for m in memory_store.list()) == sorted(i.text for i in items)
    assert memory_vectors.count() == 10
    [done] = memory_store.import_runs()
    assert done.finished and done.committed == 10 and done.added == 10


def test_a_failed_batch_leaves_its_run_where_it_was(memory_store: MemoryStore) -> None:
    run = memory_store.begin_import("b" * 64, name="x", total=10)
    real = memory_store.keywords.add
    seen = []

    def fails_on_second_batch(items) -> None:
        seen.append(1)
        if len(seen) == 2:
            raise sqlite3.OperationalError("disk I/O error")  # inside the batch transaction
        real(items)

    memory_store.keywords.add = fails_on_second_batch  # type: ignore[method-assign]
    with pytest.raises(sqlite3.OperationalError):
        memory_store.add_many(_items(10), batch_size=4, run=run)
    assert memory_store.import_runs()[0].committed == 4 == memory_store.count(None)


def test_a_finished_import_is_refused_unless_again(memory_store: MemoryStore,
                                                   fake_clock) -> None:
    run = memory_store.begin_import("c" * 64, name="notes.jsonl", total=3)
    memory_store.add_many(_items(3), run=run)
    fake_clock.advance(days=2)
    with pytest.raises(AlreadyImported) as refused:
        memory_store.begin_import("c" * 64, name="copy.jsonl", total=3)
    assert str(refused.value) == (
        "copy.jsonl was already imported as notes.jsonl on 2025-01-01 12:00 UTC (3 memories); "
        "pass --again to import it once more")
    assert memory_store.count() == 3
    again = memory_store.begin_import("c" * 64, name="notes.jsonl", total=3, again=True)
    assert again.id != run.id and again.committed == 0
    assert memory_store.add_many(_items(3), run=again).added == 3
    assert memory_store.count() == 6
    with pytest.raises(AlreadyImported, match=r"^notes\.jsonl was already imported on 2025-01-03"):
        memory_store.begin_import("c" * 64, name="notes.jsonl", total=3)


def test_two_processes_resuming_one_import_never_store_a_batch_twice(
        memory_store: MemoryStore, tmp_path: Path) -> None:
    other = MemoryStore(memory_store.db_path, embedder=lambda: HashEmbedder(dimension=128),
                        vectors=MemoryVectors)
    try:
        mine = memory_store.begin_import("d" * 64, name="x", total=6)
        theirs = other.begin_import("d" * 64, name="x", total=6)
        assert mine.id == theirs.id
        memory_store.add_many(_items(6), batch_size=4, run=mine)
        with pytest.raises(ImportConflict, match="another import of x"):
            other.add_many(_items(6), batch_size=4, run=theirs)
        assert memory_store.count() == 6
    finally:
        other.close()


def test_forget_all_during_an_import_stops_it(memory_store: MemoryStore) -> None:
    run = memory_store.begin_import("e" * 64, name="x", total=8)

    def forget_after_first_batch(done: int, total: int) -> None:
        if done == 4:
            memory_store.forget_all()

    with pytest.raises(ImportConflict):
        memory_store.add_many(_items(8), batch_size=4, run=run,
                              progress=forget_after_first_batch)
    # The second batch was not stored behind forget-all's back.
    assert memory_store.count(None) == 0 and memory_store.import_runs() == []


def test_schema_1_databases_gain_the_import_table(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite3"
    store = MemoryStore(db, embedder=lambda: HashEmbedder(dimension=128), vectors=MemoryVectors)
    kept = store.add(NewMemory("The user lives in Lisbon"), sync=False)
    store.conn.execute("DROP TABLE imports")
    store.conn.execute("ALTER TABLE profile DROP COLUMN sources")  # added by step 4
    store.conn.execute("ALTER TABLE history DROP COLUMN via")  # added by step 5
    store.conn.execute("DROP INDEX memories_pinned")  # added by step 7
    store.conn.execute("PRAGMA user_version=1")
    store.close()
    store = MemoryStore(db, embedder=lambda: HashEmbedder(dimension=128), vectors=MemoryVectors)
    try:
        assert int(store.conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION == 8
        assert store.get(kept.id).text == "The user lives in Lisbon"
        assert store.import_runs() == []
    finally:
        store.close()


def test_schema_6_databases_gain_the_pinned_index(tmp_path: Path) -> None:
    # A home from before step 7: its pinned memories were found by a pass over all memories.
    db = tmp_path / "m.sqlite3"
    store = MemoryStore(db, embedder=lambda: HashEmbedder(dimension=128), vectors=MemoryVectors)
    kept = store.add(NewMemory("The user is allergic to penicillin", pinned=True), sync=False)
    store.conn.execute("DROP INDEX memories_pinned")
    store.conn.execute("PRAGMA user_version=6")
    store.close()
    store = MemoryStore(db, embedder=lambda: HashEmbedder(dimension=128), vectors=MemoryVectors)
    try:
        assert int(store.conn.execute("PRAGMA user_version").fetchone()[0]) == 8
        plan = " ".join(str(r[-1]) for r in store.conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE status='active' AND pinned=1"))
        assert "memories_pinned" in plan, plan
        assert [m.id for m in store.list(pinned=True)] == [kept.id]
        assert store.list(pinned=False) == []
    finally:
        store.close()


def _model_profile(store: MemoryStore, text: str, sources: list[str] | None) -> None:
    store.set_profile(text, actor=Actor.ASSISTANT, sources=sources)


def test_an_erased_memory_leaves_no_word_in_the_profile(memory_store: MemoryStore) -> None:
    """Issue 22: `memory rm --forever` left the memory's text in the profile, which every
    later system prompt carries; its earlier versions (profile undo) quoted it too."""
    bike = memory_store.add(NewMemory("The user's bike is called Obsidianpelican"))
    lamp = memory_store.add(NewMemory("The user reads by a green lamp"))
    _model_profile(memory_store, "Rides a bike called Obsidianpelican.", [bike.id, lamp.id])
    _model_profile(memory_store, "Rides Obsidianpelican; reads by a green lamp.",
                   [bike.id, lamp.id])
    memory_store.purge(bike.id)
    assert "Obsidianpelican" not in memory_store.profile().text
    assert _scan([memory_store.db_path.parent], b"Obsidianpelican") == []


def test_the_profile_follows_an_edit_or_delete_of_a_memory_it_used(
        memory_store: MemoryStore) -> None:
    used = memory_store.add(NewMemory("The user lives in Lisbon"))
    other = memory_store.add(NewMemory("The user likes tea"))
    _model_profile(memory_store, "Lives in Lisbon.", [used.id])
    memory_store.edit(other.id, "The user likes green tea")
    assert memory_store.profile().text == "Lives in Lisbon."  # not built from that one
    memory_store.edit(used.id, "The user lives in Porto")
    assert memory_store.profile().text == ""  # stale: emptied until the next rewrite
    assert memory_store.undo_profile().text == "Lives in Lisbon."  # an edit can be undone
    memory_store.delete(used.id)
    assert memory_store.profile().text == ""


def test_a_profile_the_user_typed_stays(memory_store: MemoryStore) -> None:
    used = memory_store.add(NewMemory("The user lives in Lisbon"))
    memory_store.set_profile("I am a nurse.", actor=Actor.USER)
    memory_store.delete(used.id)
    assert memory_store.profile().text == "I am a nurse."
