"""Incremental sync: add, modify, touch, delete, rename, ignore, size limit, reconcile, lock."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from indexing.derived_index import EMBED_SLICE
from indexing.knowledge_types import FolderError
from indexing.lock import IndexBusy, IndexLock
from indexing.progress import Phase, SyncProgress
from indexing.tokenize import tokenize
from tests.fixtures.knowledge import index_state, inner_calls, note_text


@pytest.fixture
def kb(knowledge):
    base = knowledge.open()
    base.add_folder(knowledge.notes)
    return base


def test_first_sync_indexes_every_file_into_all_three_stores(knowledge, kb) -> None:
    for name in ("a.md", "b.md", "sub/c.md"):
        knowledge.write(name, note_text(name, 3))
    report = kb.sync(knowledge.settings())
    assert sorted(Path(p).name for p in report.added) == ["a.md", "b.md", "c.md"]
    assert report.updated == () and report.removed == () and report.unchanged == 0
    state = index_state(kb)
    state.assert_consistent()
    assert len(state.chunk_ids) == report.chunks_added >= 6  # several chunks per note
    assert report.embedded == report.chunks_added
    assert kb.stats() == (3, len(state.chunk_ids))
    [info] = kb.folders()
    assert info.path == str(knowledge.notes.resolve())
    assert (info.files, info.chunks) == (3, len(state.chunk_ids))
    assert info.last_sync is not None


def test_resync_without_changes_touches_nothing(knowledge, kb) -> None:
    for i in range(4):
        knowledge.write(f"n{i}.md", note_text(f"n{i}"))
    kb.sync(knowledge.settings())
    before = index_state(kb)
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings())
    assert report.unchanged == 4
    assert not report.changed
    assert report.embedded == 0 and report.chunks_added == 0 and report.chunks_removed == 0
    assert inner_calls(knowledge.embedder) == calls
    assert index_state(kb) == before


def test_modified_file_replaces_exactly_its_changed_chunks(knowledge, kb) -> None:
    path = knowledge.write("a.md", note_text("a", 3))
    knowledge.write("b.md", note_text("b", 3))
    kb.sync(knowledge.settings())
    before = index_state(kb)
    a_before = before.files[str(path)]
    b_before = before.files[str(knowledge.notes / "b.md")]
    # Change only the last section of a.md: the first chunks keep their ids.
    text = path.read_text()
    path.write_text(text.replace("a part 2", "a part two, rewritten"))
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings())
    assert report.updated == (str(path),)
    assert report.added == () and report.removed == () and report.unchanged == 1
    after = index_state(kb)
    after.assert_consistent()
    a_after = after.files[str(path)]
    kept = set(a_before) & set(a_after)
    assert kept, "unchanged sections must keep their chunk ids"
    assert set(a_before) - set(a_after), "the edited section must get a new id"
    assert after.files[str(knowledge.notes / "b.md")] == b_before
    # Only the new chunks were embedded, nothing else.
    assert report.chunks_added == len(set(a_after) - set(a_before))
    assert report.chunks_removed == len(set(a_before) - set(a_after))
    assert inner_calls(knowledge.embedder) - calls == report.chunks_added
    chunks = kb.get_chunks(a_after)
    assert any("rewritten" in c.text for c in chunks.values())
    # The keyword tokens read back for the search's keyword scores follow the edit too.
    assert kb.chunk_terms(a_after) == {i: tokenize(c.text) for i, c in chunks.items()}


def test_touched_file_with_same_content_is_not_reembedded(knowledge, kb) -> None:
    path = knowledge.write("a.md", note_text("a"))
    kb.sync(knowledge.settings())
    before = index_state(kb)
    st = path.stat()
    os.utime(path, (st.st_atime, st.st_mtime + 1000))
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings())
    assert report.unchanged == 1 and not report.changed
    assert inner_calls(knowledge.embedder) == calls
    assert index_state(kb) == before
    chunk = next(iter(kb.get_chunks(before.chunk_ids).values()))
    assert chunk.mtime == pytest.approx(st.st_mtime + 1000)
    # The new stat is recorded: the next sync does not even read the file.
    assert kb.manifest.files()[str(path)].mtime == pytest.approx(st.st_mtime + 1000)


def test_deleted_file_loses_its_chunks_everywhere(knowledge, kb) -> None:
    gone = knowledge.write("gone.md", note_text("gone"))
    knowledge.write("stays.md", note_text("stays"))
    kb.sync(knowledge.settings())
    gone_ids = set(index_state(kb).files[str(gone)])
    gone.unlink()
    report = kb.sync(knowledge.settings())
    assert report.removed == (str(gone),)
    assert report.chunks_removed == len(gone_ids)
    state = index_state(kb)
    state.assert_consistent()
    assert not gone_ids & state.chunk_ids
    assert str(gone) not in state.files
    assert kb.keyword_search("gone", 10, sources=[str(gone)]) == []


def test_renamed_file_reuses_cached_embeddings(knowledge, kb) -> None:
    old = knowledge.write("old-name.md", note_text("renamed note", 4))
    kb.sync(knowledge.settings())
    calls = inner_calls(knowledge.embedder)
    new = knowledge.notes / "moved" / "new-name.md"
    new.parent.mkdir()
    old.rename(new)
    report = kb.sync(knowledge.settings())
    assert report.added == (str(new),) and report.removed == (str(old),)
    assert report.chunks_added > 0
    assert report.embedded == 0 and report.cache_hits == report.chunks_added
    assert inner_calls(knowledge.embedder) == calls, "a move must not run the model"
    state = index_state(kb)
    state.assert_consistent()
    assert set(state.files) == {str(new)}
    assert {c.source for c in kb.get_chunks(state.chunk_ids).values()} == {str(new)}


def test_gitignore_added_later_removes_now_ignored_files(knowledge, kb) -> None:
    knowledge.write("keep.md", note_text("keep"))
    secret = knowledge.write("private/diary.md", note_text("diary"))
    kb.sync(knowledge.settings())
    assert str(secret) in index_state(kb).files
    knowledge.write(".gitignore", "private/\n")
    report = kb.sync(knowledge.settings())
    assert report.removed == (str(secret),)
    state = index_state(kb)
    state.assert_consistent()
    assert set(state.files) == {str(knowledge.notes / "keep.md")}


def test_excluded_and_too_large_files_are_removed_with_a_reason(knowledge, kb) -> None:
    knowledge.write("small.md", note_text("small", 1))
    big = knowledge.write("big.md", note_text("big", 6))
    log = knowledge.write("debug.log.md", note_text("log", 1))
    kb.sync(knowledge.settings())
    assert len(index_state(kb).files) == 3
    settings = knowledge.settings(max_file_bytes=big.stat().st_size - 1, exclude=("debug.*",))
    report = kb.sync(settings)
    assert set(report.removed) == {str(big), str(log)}
    assert [p for p, _ in report.skipped["too_large"]] == [str(big)]
    index_state(kb).assert_consistent()


def test_unreadable_and_binary_files_are_skipped_not_fatal(knowledge, kb) -> None:
    knowledge.write("fine.md", note_text("fine", 1))
    (knowledge.notes / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (knowledge.notes / "bad.txt").write_bytes(b"\x00binary\x00content\xff" * 50)
    (knowledge.notes / "empty.md").write_bytes(b"")
    report = kb.sync(knowledge.settings())
    assert report.added == (str(knowledge.notes / "fine.md"),)
    reasons = {Path(p).name: reason for reason, items in report.skipped.items() for p, _ in items}
    assert reasons == {"blob.bin": "binary", "bad.txt": "binary", "empty.md": "empty"}
    index_state(kb).assert_consistent()


def test_a_reader_bug_skips_its_file_and_leaves_its_traceback_in_the_log(
    knowledge, kb, monkeypatch, caplog
) -> None:
    """One bad file never stops a sync; a bug reading it is listed and logged in full."""
    from indexing.chunking import chunk_file

    fine = knowledge.write("fine.md", note_text("fine", 1))
    bad = knowledge.write("bad.md", note_text("bad", 1))

    def chunk(source, decoded, settings):
        if source.path.name == "bad.md":
            raise RuntimeError("a chunker bug")
        return chunk_file(source, decoded, settings)

    monkeypatch.setattr("indexing.sync.chunk_file", chunk)  # where the sync looks it up
    with caplog.at_level(logging.INFO, logger="indexing.sync"):
        report = kb.sync(knowledge.settings())
    assert report.added == (str(fine),)
    assert report.skipped["error"] == ((str(bad), "RuntimeError: a chunker bug"),)
    [record] = [r for r in caplog.records if r.name == "indexing.sync"]
    assert str(bad) in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    index_state(kb).assert_consistent()


def test_file_that_becomes_undecodable_loses_its_chunks(knowledge, kb) -> None:
    path = knowledge.write("notes.txt", "plain text notes about kernels and sockets\n" * 5)
    kb.sync(knowledge.settings())
    assert index_state(kb).chunk_ids
    path.write_bytes(b"\x00\x00garbage\x00" * 40)
    report = kb.sync(knowledge.settings())
    assert report.removed == (str(path),)
    assert index_state(kb).chunk_ids == set()


def test_reconcile_repairs_orphan_and_missing_vectors(knowledge, kb) -> None:
    for i in range(3):
        knowledge.write(f"n{i}.md", note_text(f"n{i}"))
    kb.sync(knowledge.settings())
    state = index_state(kb)
    store = kb.vectors()
    victim = sorted(state.chunk_ids)[0]
    store.delete([victim])
    store.upsert(["orphan-id"], knowledge.embedder.embed_documents(["orphan"]), [{"source": "x"}])
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings())
    assert report.repaired == 2
    assert inner_calls(knowledge.embedder) == calls, "re-upsert must come from the cache"
    index_state(kb).assert_consistent()


def test_an_unchanged_resync_opens_no_vector_store(knowledge, kb, monkeypatch) -> None:
    """After a complete sync the store is recorded as matching the manifest: a re-sync that
    finds nothing changed neither opens Chroma nor lists its ids (issue 25: 28 of 36 s at 31k
    chunks); one that finds a change opens it, and the stores still match afterwards."""
    import indexing.vectors as vectors

    for i in range(3):
        path = knowledge.write(f"n{i}.md", note_text(f"n{i}"))
    kb.sync(knowledge.settings())
    real_open = vectors.VectorStore.open
    opened: list[str] = []

    def counting_open(*args, **kwargs):
        opened.append(args[1] if len(args) > 1 else kwargs.get("collection", "?"))
        return real_open(*args, **kwargs)

    monkeypatch.setattr(vectors.VectorStore, "open", counting_open)
    fresh = knowledge.open()
    report = fresh.sync(knowledge.settings())
    assert report.unchanged == 3 and not report.changed
    assert opened == []
    path.write_text(note_text("n2", seed="edited"))
    report = fresh.sync(knowledge.settings())
    assert report.updated == (str(path),) and opened
    index_state(fresh).assert_consistent()


def test_a_sync_that_stops_while_writing_vectors_leaves_no_match_record(
    knowledge, kb, monkeypatch
) -> None:
    """The record is deleted (committed) before the first write to the store: a sync that
    dies after writing leaves none, so the next one reconciles the orphans it may have left."""
    import indexing.vectors as vectors
    from indexing.vectors_match import META_KEY

    path = knowledge.write("a.md", note_text("a"))
    kb.sync(knowledge.settings())
    assert kb.manifest.get_meta(META_KEY)
    real_upsert = vectors.VectorStore.upsert

    def upsert_then_die(self, *args, **kwargs):
        real_upsert(self, *args, **kwargs)
        raise KeyboardInterrupt  # the vectors are written, the SQLite commit never comes

    monkeypatch.setattr(vectors.VectorStore, "upsert", upsert_then_die)
    path.write_text(note_text("a", seed="edited"))
    with pytest.raises(KeyboardInterrupt):
        knowledge.open().sync(knowledge.settings())
    assert knowledge.open().manifest.get_meta(META_KEY) is None
    monkeypatch.setattr(vectors.VectorStore, "upsert", real_upsert)
    report = knowledge.open().sync(knowledge.settings())
    assert report.repaired > 0  # the orphans the dead sync upserted
    index_state(knowledge.open()).assert_consistent()


def test_a_store_written_after_the_last_sync_is_reconciled(knowledge, kb) -> None:
    """The record names Chroma's database file: anything writing to the store since (another
    collection, a tool, a store moved aside and recreated) makes the next sync reconcile."""
    for i in range(3):
        knowledge.write(f"n{i}.md", note_text(f"n{i}"))
    kb.sync(knowledge.settings())
    victim = sorted(index_state(kb).chunk_ids)[0]
    kb.vectors().delete([victim])
    report = kb.sync(knowledge.settings())
    assert report.repaired == 1
    index_state(kb).assert_consistent()


def test_search_filters_by_sources(knowledge, kb) -> None:
    a = knowledge.write("docs/a.md", "# Sockets\n\nHow to open a socket and read a packet.\n")
    b = knowledge.write("other/b.md", "# Gardens\n\nHow to water a garden by the river.\n")
    kb.sync(knowledge.settings())
    assert kb.sources_under(str(knowledge.notes / "docs")) == [str(a)]
    assert kb.sources_under("*.md") == sorted([str(a), str(b)])
    assert kb.sources_under(str(knowledge.notes / "*" / "b.md")) == [str(b)]
    hits = kb.keyword_search("socket packet", 5)
    assert hits and kb.get_chunks([hits[0][0]])[hits[0][0]].source == str(a)
    assert kb.keyword_search("socket", 5, sources=[str(b)]) == []
    query = knowledge.embedder.embed_query("water the garden")
    dense = kb.dense_search(query, 5)
    assert kb.get_chunks([dense[0][0]])[dense[0][0]].source == str(b)
    only_a = kb.dense_search(query, 5, sources=[str(a)])
    assert only_a and all(kb.get_chunks([i])[i].source == str(a) for i, _ in only_a)
    assert kb.dense_search(query, 5, sources=[]) == []


def test_sources_modified_uses_the_indexed_file_times(knowledge, kb) -> None:
    import os

    old = knowledge.write("old.md", "# Old\n\nWritten long ago.\n")
    new = knowledge.write("new.md", "# New\n\nWritten today.\n")
    os.utime(old, (1_600_000_000, 1_600_000_000))
    kb.sync(knowledge.settings())
    assert kb.sources_modified(1_700_000_000, None) == [str(new)]
    assert kb.sources_modified(None, 1_700_000_000) == [str(old)]
    assert kb.sources_modified(None, None) == sorted([str(new), str(old)])


def test_folder_registration_rules(knowledge, tmp_path) -> None:
    kb = knowledge.open()
    inner = knowledge.notes / "inner"
    inner.mkdir()
    knowledge.write("inner/x.md", note_text("x"))
    knowledge.write("top.md", note_text("top"))
    # Register the inner folder first and index it.
    assert kb.add_folder(inner).status == "added"
    kb.sync(knowledge.settings())
    inner_ids = index_state(kb).chunk_ids
    # Registering it again is a no-op; so is anything inside it.
    assert kb.add_folder(inner).status == "already"
    # A parent absorbs it once its first sync succeeds: its chunks are kept (no re-embedding)
    # and re-homed; until then both stay registered.
    added = kb.add_folder(knowledge.notes)
    assert added.status == "added" and added.absorbed == (str(inner.resolve()),)
    assert len(kb.folders()) == 2
    calls = inner_calls(knowledge.embedder)
    report = kb.sync(knowledge.settings())
    assert [f.path for f in kb.folders()] == [str(knowledge.notes.resolve())]
    assert report.absorbed == ((str(inner.resolve()), str(knowledge.notes.resolve())),)
    assert report.added == (str(knowledge.notes / "top.md"),)
    assert report.unchanged == 1
    assert inner_ids <= index_state(kb).chunk_ids
    assert inner_calls(knowledge.embedder) - calls == report.chunks_added
    inside = kb.add_folder(inner)
    assert inside.status == "inside" and inside.parent == str(knowledge.notes.resolve())
    index_state(kb).assert_consistent()


def test_bad_folders_give_clear_errors(knowledge, tmp_path) -> None:
    kb = knowledge.open()
    with pytest.raises(FolderError, match="no such folder"):
        kb.add_folder(tmp_path / "missing")
    file = knowledge.write("f.md", "x")
    with pytest.raises(FolderError, match="is a file, not a folder"):
        kb.add_folder(file)
    with pytest.raises(FolderError, match="not a registered folder"):
        kb.remove_folder(knowledge.notes)
    assert kb.folders() == []


def test_unreadable_folder_is_refused(knowledge, monkeypatch) -> None:
    kb = knowledge.open()
    # Tests run as root, who can read anything: simulate the permission check failing.
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(FolderError, match="permission denied"):
        kb.add_folder(knowledge.notes)


def test_remove_folder_deletes_its_chunks_everywhere(knowledge, tmp_path) -> None:
    kb = knowledge.open()
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.md").write_text(note_text("other"))
    knowledge.write("n.md", note_text("n"))
    kb.add_folder(knowledge.notes)
    kb.add_folder(other)
    kb.sync(knowledge.settings())
    other_ids = set(index_state(kb).files[str(other / "o.md")])
    removed = kb.remove_folder(other)
    assert (removed.files, removed.chunks) == (1, len(other_ids))
    state = index_state(kb)
    state.assert_consistent()
    assert not other_ids & (state.chunk_ids | state.vector_ids | state.fts_ids)
    assert [f.path for f in kb.folders()] == [str(knowledge.notes.resolve())]
    # Without an embedder (as `brain folders rm` runs) the vectors are deleted too.
    light = knowledge.open_light()
    assert light.remove_folder(knowledge.notes).files == 1
    assert index_state(kb).vector_ids == set()
    assert kb.stats() == (0, 0)
    assert kb.folders() == []


def test_missing_folder_keeps_its_chunks_and_is_reported(knowledge, kb, tmp_path) -> None:
    knowledge.write("n.md", note_text("n"))
    kb.sync(knowledge.settings())
    before = index_state(kb)
    moved = tmp_path / "elsewhere"
    knowledge.notes.rename(moved)
    report = kb.sync(knowledge.settings())
    assert report.missing_folders == (str(knowledge.notes.resolve()),)
    assert index_state(kb) == before


def test_second_writer_waits_then_reports_the_busy_pid(knowledge, kb) -> None:
    knowledge.write("n.md", note_text("n"))
    holder = IndexLock(kb.lock.path, timeout=1)
    holder.acquire()
    try:
        busy = knowledge.open(lock_timeout=0.2)
        with pytest.raises(IndexBusy, match=f"PID {os.getpid()}"):
            busy.sync(knowledge.settings())
    finally:
        holder.release()
    assert kb.sync(knowledge.settings()).added  # free again


def test_changed_chunk_settings_rechunk_every_file(knowledge, kb) -> None:
    from dataclasses import replace

    from indexing.chunking import ChunkSettings

    for i in range(3):
        knowledge.write(f"n{i}.md", note_text(f"n{i}", 4))
    settings = knowledge.settings()
    kb.sync(settings)
    before = index_state(kb)
    smaller = replace(
        settings, chunking=ChunkSettings(chunk_size=200, chunk_overlap=20, min_chunk_chars=50)
    )
    report = kb.sync(smaller)
    assert len(report.updated) == 3, "new chunk settings must re-chunk files that did not change"
    after = index_state(kb)
    after.assert_consistent()
    assert after.chunk_ids != before.chunk_ids
    assert max(len(c.text) for c in kb.get_chunks(after.chunk_ids).values()) <= 200
    again = kb.sync(smaller)
    assert not again.changed and again.unchanged == 3


def test_a_progress_callback_can_cancel_and_the_next_sync_completes(knowledge, kb) -> None:
    for i in range(12):
        knowledge.write(f"n{i}.md", note_text(f"n{i}", 3))

    class Cancelled(Exception):
        pass

    def cancel_after_first_batch(event) -> None:
        if event.phase == Phase.indexing and event.chunks_done > 0:  # a batch is stored
            raise Cancelled

    with pytest.raises(Cancelled):
        kb.sync(knowledge.settings(), progress=cancel_after_first_batch)
    partial = index_state(kb)
    partial.assert_consistent()
    assert 0 < len(partial.files) < 12
    report = kb.sync(knowledge.settings())
    assert len(report.added) == 12 - len(partial.files)
    index_state(kb).assert_consistent()
    assert kb.stats()[0] == 12


def test_progress_moves_per_file_while_reading_and_per_batch_while_embedding(
    knowledge, kb
) -> None:
    """Issue 15: the bar used to move only after each 512-chunk round (a minute of CPU on a
    cold index); now every file read and every model batch is an event, and the final file
    count is the summary's."""
    for i in range(10):
        knowledge.write(f"n{i}.md", note_text(f"n{i}", 6))
    # Read, then skipped as binary: a file the bar counted, so the summary must count it too.
    (knowledge.notes / "blob.md").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    events: list[SyncProgress] = []
    settings = knowledge.settings()
    from dataclasses import replace

    report = kb.sync(replace(settings, batch_chunks=4 * EMBED_SLICE), progress=events.append)
    reading = [e for e in events if e.phase == Phase.indexing and e.files_total]
    assert [e.files_done for e in reading] == list(range(12))  # 0: the start, then per file
    first_embedding = next(i for i, e in enumerate(events) if e.phase == Phase.embedding)
    assert events.index(reading[0]) < first_embedding  # moves before the first model call
    embedding = [e for e in events if e.phase == Phase.embedding]
    assert len(embedding) >= report.embedded // EMBED_SLICE >= 1
    assert [e.chunks_done for e in embedding] == sorted(e.chunks_done for e in embedding)
    assert embedding[-1].chunks_done == embedding[-1].chunks_total == report.embedded
    done = events[-1]
    assert done.phase == Phase.done
    skipped = sum(len(v) for v in report.skipped.values())
    assert done.files_done == done.files_total == len(report.added) + skipped == 11


def test_a_parent_whose_first_sync_fails_never_takes_the_registered_folders(
    knowledge, monkeypatch
) -> None:
    # `brain index /` beside ~/notes: the walk of / fails (here: the embedder dies mid-way);
    # ~/notes must stay registered with all its chunks, and removing / must not touch them.
    kb = knowledge.open()
    inner = knowledge.notes / "inner"
    inner.mkdir()
    knowledge.write("inner/x.md", note_text("x"))
    knowledge.write("top.md", note_text("top"))
    kb.add_folder(inner)
    kb.sync(knowledge.settings())
    before = index_state(kb)
    kb.add_folder(knowledge.notes)

    def broken(texts):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(knowledge.embedder, "embed_documents", broken)
    with pytest.raises(OSError):
        kb.sync(knowledge.settings(), folders=[knowledge.notes])
    monkeypatch.undo()
    paths = sorted(f.path for f in kb.folders())
    assert paths == sorted([str(inner.resolve()), str(knowledge.notes.resolve())])
    assert {f.path: f.files for f in kb.folders()}[str(inner.resolve())] == 1
    kb.remove_folder(knowledge.notes)
    assert [f.path for f in kb.folders()] == [str(inner.resolve())]
    assert index_state(kb) == before
    # A later sync of the inner folder alone still works (it is not "inside" a broken parent).
    assert kb.sync(knowledge.settings(), folders=[inner]).unchanged == 1


def test_a_folder_that_cannot_be_looked_into_is_skipped_not_fatal(
    knowledge, kb, monkeypatch
) -> None:
    # /proc/1/fdinfo as root: even asking whether it holds a pyvenv.cfg gives EACCES.
    knowledge.write("a.md", note_text("a"))
    knowledge.write("locked/b.md", note_text("b"))
    locked = knowledge.notes / "locked"
    real_is_file, real_scandir = Path.is_file, os.scandir

    def is_file(self: Path) -> bool:
        if self.parent == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    def scandir(path):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(Path, "is_file", is_file)
    monkeypatch.setattr(os, "scandir", scandir)
    for _ in range(2):  # and the next sync does not start failing either
        report = kb.sync(knowledge.settings())
        [(path, detail)] = report.skipped["unreadable"]
        assert path == str(locked) and "ermission denied" in detail
    assert kb.stats()[0] == 1
