"""`brain index` and `brain folders`: behaviour, messages, exit codes and the JSON contract."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from tests.fixtures.knowledge import make_embedder, note_text
from tests.signals import default_sigint


class IndexCli:
    """`brain ARGS…` in-process, and the embedder every command is given."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder  # make_embedder's: a CachedEmbedder over a HashEmbedder

    def __call__(self, *argv: str) -> int:
        return main([*argv])


@pytest.fixture
def cli(home, tmp_path, monkeypatch) -> IndexCli:
    """Run `brain …` in-process with the cached HashEmbedder instead of the real model."""
    embedder = make_embedder(tmp_path / "embed-cache")
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    return IndexCli(embedder)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.md").write_text(note_text(f"note {i}", 2))
    return folder


def _folders_json(cli, capsys) -> dict:
    capsys.readouterr()
    assert cli("folders", "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_index_registers_syncs_and_lists_folders(cli, notes, capsys) -> None:
    assert cli("index", str(notes)) == 0
    out = capsys.readouterr().out
    assert "3 added" in out and "Index: 3 files" in out
    data = _folders_json(cli, capsys)
    assert list(data) == ["folders"]
    [entry] = data["folders"]
    assert set(entry) == {"path", "files", "chunks", "last_sync"}
    assert entry["path"] == str(notes.resolve())
    assert entry["files"] == 3 and entry["chunks"] >= 3
    assert datetime.fromisoformat(entry["last_sync"]).tzinfo is not None
    assert cli("folders") == 0
    table = capsys.readouterr().out
    assert str(notes.resolve()) in table and "1 folder(s), 3 files" in table


def test_index_json_report_and_resync(cli, notes, capsys) -> None:
    assert cli("index", str(notes), "--json") == 0
    first = json.loads(capsys.readouterr().out)
    assert len(first["added"]) == 3 and first["embedded"] == first["chunks_added"] > 0
    (notes / "n0.md").write_text(note_text("note 0 edited", 2, seed=1))
    (notes / "n1.md").unlink()
    (notes / "new.md").write_text(note_text("brand new", 1))
    assert cli("index", "--sync", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["updated"] == [str(notes / "n0.md")]
    assert report["removed"] == [str(notes / "n1.md")]
    assert report["added"] == [str(notes / "new.md")]
    assert report["unchanged"] == 1
    assert report["total_files"] == 3


def test_rebuild_uses_the_cache(cli, notes, capsys) -> None:
    assert cli("index", str(notes), "--json") == 0
    first = json.loads(capsys.readouterr().out)
    calls = cli.embedder.inner.texts_embedded
    assert cli("index", "--rebuild", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rebuilt"] and report["embedded"] == 0
    assert report["chunks_added"] == first["chunks_added"]
    assert cli.embedder.inner.texts_embedded == calls
    # Issue 15 snag 9: "embedded 0, cache hits 0" did not say where the vectors came from.
    assert report["reused"] == first["chunks_added"] > 0
    assert cli("index", "--rebuild") == 0
    assert f"vectors kept {first['chunks_added']}" in capsys.readouterr().out


def test_verbose_lists_skipped_files_by_reason(cli, notes, capsys) -> None:
    (notes / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    (notes / "empty.txt").write_text("")
    assert cli("index", str(notes)) == 0
    out = capsys.readouterr().out
    assert "2 skipped" in out and "--verbose" in out
    assert cli("index", "--sync", "--verbose") == 0
    out = capsys.readouterr().out
    assert "Skipped (binary): 1" in out and str(notes / "image.png") in out
    assert "Skipped (empty): 1" in out and str(notes / "empty.txt") in out


def test_plain_progress_lines_when_not_a_tty(cli, notes, capsys) -> None:
    assert cli("index", str(notes)) == 0
    out = capsys.readouterr().out
    assert "indexing: 3/3 files" in out
    assert "\x1b[" not in out  # no terminal control codes in a pipe


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "does-not-exist", "no such folder"),
        (lambda tmp: (tmp / "file.md").write_text("x") and tmp / "file.md", "is a file"),
    ],
)
def test_bad_paths_exit_1_with_a_clear_message(cli, notes, tmp_path, capsys, make, message
                                               ) -> None:
    bad = make(tmp_path)
    assert cli("index", str(notes), str(bad)) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    # Nothing was registered: validation happens before any work.
    assert _folders_json(cli, capsys) == {"folders": []}


def test_nothing_to_do_is_an_error_with_a_hint(cli, capsys) -> None:
    assert cli("index") == 1
    assert "brain index ~/notes" in capsys.readouterr().err
    assert cli("index", "--sync") == 1
    assert "no folders registered" in capsys.readouterr().err


def test_nested_and_duplicate_registration(cli, notes, capsys) -> None:
    sub = notes / "sub"
    sub.mkdir()
    (sub / "s.md").write_text(note_text("sub note"))
    assert cli("index", str(sub)) == 0
    assert cli("index", str(notes)) == 0
    out = capsys.readouterr().out
    assert f"{sub.resolve()} is now covered by {notes.resolve()}" in out
    assert cli("index", str(sub)) == 0
    assert "already indexed as part of" in capsys.readouterr().out
    assert cli("index", str(notes)) == 0
    assert "already registered" in capsys.readouterr().out
    data = _folders_json(cli, capsys)
    assert [f["path"] for f in data["folders"]] == [str(notes.resolve())]
    assert data["folders"][0]["files"] == 4


def test_folders_rm_deletes_chunks_and_unknown_path_fails(cli, notes, tmp_path, capsys) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.md").write_text(note_text("other"))
    assert cli("index", str(notes), str(other)) == 0
    assert cli("folders", "rm", str(other)) == 0
    assert "Removed" in capsys.readouterr().out
    data = _folders_json(cli, capsys)
    assert [f["path"] for f in data["folders"]] == [str(notes.resolve())]
    assert cli("index", "--sync", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["total_files"] == 3 and report["repaired"] == 0  # Chroma was cleaned too
    # Running the same removal again is accepted (issue 22: a killed one may have been finished
    # by a later command); a folder that was never indexed is still an error.
    assert cli("folders", "rm", str(other)) == 0
    assert "removed from the index earlier" in capsys.readouterr().out
    assert cli("folders", "rm", str(tmp_path / "never")) == 1
    assert "not a registered folder" in capsys.readouterr().err


def test_busy_index_names_the_holder(cli, notes, home, capsys, monkeypatch) -> None:
    import functools

    from assistant import knowledge_service
    from indexing.lock import IndexLock

    assert cli("index", str(notes)) == 0
    # Wait 0.2 s instead of the default 5 s before giving up (the command opens the index
    # through Services, which calls knowledge_service.open_knowledge).
    monkeypatch.setattr(
        knowledge_service, "open_knowledge",
        functools.partial(knowledge_service.open_knowledge, lock_timeout=0.2),
    )
    ctx = AppContext.load(str(home))
    lock = IndexLock(Path(str(ctx.paths.knowledge_db) + ".lock"), timeout=1)
    lock.acquire()
    try:
        assert cli("index", "--sync") == 1
    finally:
        lock.release()
    err = capsys.readouterr().err
    assert f"being updated by PID {os.getpid()}" in err


def test_corrupt_database_is_a_clear_error(cli, notes, home, capsys) -> None:
    ctx = AppContext.load(str(home))
    ctx.paths.knowledge_db.write_bytes(b"this is not a database" * 100)
    assert cli("folders") == 1
    err = capsys.readouterr().err
    assert "cannot open the knowledge database" in err and "Traceback" not in err


@pytest.mark.slow
def test_index_and_search_with_the_bundled_model(notes, home, real_embedder, monkeypatch,
                                                 capsys) -> None:
    """The real model (loaded once per session) through the CLI: 384-d vectors, and the
    nearest chunk to a note's own text is that note."""
    monkeypatch.setattr(AppContext, "embedder", lambda self: real_embedder)
    (notes / "tar.md").write_text(
        "# tar\n\n> Archiving utility.\n\n- Create an archive from files:\n\n"
        "`tar cf target.tar file1 file2 file3`\n"
    )
    assert main(["index", str(notes), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["added"]) == 4
    from assistant.knowledge_service import open_knowledge

    kb = open_knowledge(AppContext.load(str(home)))
    try:
        assert kb.indexed_model == real_embedder.model_id and real_embedder.dimension == 384
        query = real_embedder.embed_query("how do I create a tar archive of some files")
        [(best, score), *_] = kb.dense_search(query, 3)
        assert kb.get_chunks([best])[best].source == str(notes / "tar.md")
        assert 0.3 < score <= 1.0001
    finally:
        kb.close()


def test_config_maps_onto_indexing_settings(home) -> None:
    from assistant.config_load import config_from_dict
    from assistant.errors import UserError
    from assistant.knowledge_service import sync_settings, vector_location

    config = config_from_dict(
        {
            "indexing": {
                "chunk_size": 800, "chunk_overlap": 100, "max_file_mb": 0.5,
                "include": ["*.md"], "exclude": ["drafts/"], "respect_gitignore": False,
            },
            "embedding": {"batch_size": 32},
        }
    )
    settings = sync_settings(config)
    assert (settings.chunking.chunk_size, settings.chunking.chunk_overlap) == (800, 100)
    assert settings.sources.include == ("*.md",) and settings.sources.exclude == ("drafts/",)
    assert settings.sources.max_file_bytes == 512 * 1024
    assert settings.sources.respect_gitignore is False
    assert settings.batch_chunks % 32 == 0
    # An overlap the chunker refuses is a config error, not a traceback mid-sync.
    with pytest.raises(UserError, match="chunk_overlap"):
        sync_settings(config_from_dict({"indexing": {"chunk_size": 300, "chunk_overlap": 250}}))

    ctx = AppContext.load(str(home))
    assert vector_location(ctx) == ctx.paths.vectors_dir
    ctx.config.store.vector_store = "http://127.0.0.1:8123/"
    assert vector_location(ctx) == "http://127.0.0.1:8123"
    ctx.config.store.vector_store = "127.0.0.1:8123"
    with pytest.raises(UserError, match="http"):
        vector_location(ctx)


WATCH_SCRIPT = r"""
import sys
from pathlib import Path
from assistant.context import AppContext
from tests.fixtures.knowledge import make_embedder
embedder = make_embedder(Path(sys.argv[1]))
AppContext.embedder = lambda self: embedder
from assistant.cli.main import main
sys.exit(main(["index", sys.argv[2], "--watch"]))
"""


def test_index_watch_follows_changes_and_stops_on_ctrl_c(notes, home, tmp_path) -> None:
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[indexing]\nwatch_debounce_ms = 100\n")
    env = {**os.environ, "BRAIN_HOME": str(home), "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WATCH_SCRIPT, str(tmp_path / "cache"), str(notes)],
        cwd=root, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    lines: list[str] = []

    def read_until(fragment: str, timeout: float = 60) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"brain exited early: {lines} {proc.stderr.read()}")
            lines.append(line)
            if fragment in line:
                return
        raise AssertionError(f"no {fragment!r} in {lines}")

    try:
        read_until("Watching for changes")
        # The watch starts a moment after the message: write until a sync reports it.
        assert proc.stdout is not None
        import threading

        found = threading.Event()

        def reader() -> None:
            read_until("1 added", timeout=60)
            found.set()

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not found.is_set() and time.monotonic() < deadline:
            (notes / "live.md").write_text("# Live\n\nwatched text\n")
            found.wait(0.5)
        assert found.is_set(), lines
        # Issue 15 snag 9: the start summary once; the watcher's own first pass (same skipped
        # files, nothing changed) used to print it a second time.
        assert sum("Synced 1 folder" in line for line in lines) == 1, lines
        assert not [line for line in lines if line.startswith("[")
                    and "0 added, 0 updated, 0 removed" in line], lines
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
