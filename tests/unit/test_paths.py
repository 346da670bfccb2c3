"""Where state lives: --home / BRAIN_HOME / platform dirs, and that it is private (0700/0600)."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from assistant.paths import (
    APP_NAME,
    AppPaths,
    apply_private_umask,
    ensure_private_dir,
    private_file,
    resolve_paths,
)


@pytest.fixture
def restore_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    os.umask(previous)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_explicit_home_puts_everything_under_it(tmp_path: Path) -> None:
    paths = resolve_paths(tmp_path / "h")
    assert paths == AppPaths(tmp_path / "h" / "config", tmp_path / "h" / "data",
                             tmp_path / "h" / "cache")
    assert paths.config_file == tmp_path / "h" / "config" / "config.toml"
    for db in (paths.knowledge_db, paths.memory_db, paths.sessions_db, paths.retrieval_log_db,
               paths.vectors_dir, paths.log_dir, paths.lock_file, paths.ui_state_file):
        assert db.parent == paths.data_dir or db.parent.parent == paths.data_dir
    assert paths.embedding_cache_dir.parent == paths.cache_dir


def test_brain_home_env_and_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_HOME", str(tmp_path / "env"))
    assert resolve_paths().data_dir == tmp_path / "env" / "data"
    assert resolve_paths(tmp_path / "flag").data_dir == tmp_path / "flag" / "data"
    monkeypatch.setenv("BRAIN_HOME", "")  # empty means unset, not the current directory
    assert resolve_paths().data_dir != Path.cwd() / "data"


def test_home_is_expanded_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_paths("~/brain").config_dir == tmp_path / "brain" / "config"
    monkeypatch.chdir(tmp_path)
    assert resolve_paths("rel").data_dir == tmp_path / "rel" / "data"


@pytest.mark.skipif(sys.platform != "linux", reason="XDG directories are Linux's convention")
def test_platform_dirs_follow_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BRAIN_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xd"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xk"))
    paths = resolve_paths()
    assert paths.config_dir == tmp_path / "xc" / APP_NAME
    assert paths.data_dir == tmp_path / "xd" / APP_NAME
    assert paths.cache_dir == tmp_path / "xk" / APP_NAME


def test_platform_dirs_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("BRAIN_HOME", raising=False)
    paths = resolve_paths()
    assert paths.config_dir == Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))
    assert paths.data_dir == Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    assert paths.cache_dir == Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def test_dirs_are_0700_whatever_the_umask(tmp_path: Path, restore_umask: None) -> None:
    os.umask(0o022)
    paths = resolve_paths(tmp_path / "h").ensure()
    for directory in (paths.config_dir, paths.data_dir, paths.cache_dir):
        assert _mode(directory) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    ensure_private_dir(loose)
    assert _mode(loose) == 0o700  # an existing, too-open directory is tightened


def test_private_umask_makes_library_files_0600(tmp_path: Path, restore_umask: None) -> None:
    os.umask(0o022)
    previous = apply_private_umask()
    assert previous == 0o022
    db = tmp_path / "x.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("pragma journal_mode=wal")
        conn.execute("create table t (x)")
        conn.execute("insert into t values (1)")
        assert _mode(Path(f"{db}-wal")) == 0o600
    assert _mode(db) == 0o600
    (tmp_path / "plain.txt").write_text("x")
    assert _mode(tmp_path / "plain.txt") == 0o600
    (tmp_path / "sub").mkdir()
    assert _mode(tmp_path / "sub") == 0o700


def test_private_umask_keeps_stricter_bits(restore_umask: None) -> None:
    os.umask(0o277)
    apply_private_umask()
    current = os.umask(0o022)
    assert current == 0o277


def test_private_file(tmp_path: Path, restore_umask: None) -> None:
    os.umask(0o022)
    path = tmp_path / "export.json"
    path.write_text("{}")
    assert _mode(path) == 0o644
    assert private_file(path) == path
    assert _mode(path) == 0o600


def test_context_load_creates_private_state(home: Path, restore_umask: None) -> None:
    os.umask(0o022)
    ctx = AppContext.load()
    assert ctx.paths.data_dir == home / "data"
    assert _mode(ctx.paths.config_file) == 0o600
    assert _mode(home / "data") == 0o700
    ctx.paths.ui_state_file.write_text("{}")
    assert _mode(ctx.paths.ui_state_file) == 0o600


def test_cli_home_flag_before_or_after_the_command(tmp_path: Path, restore_umask: None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--home", str(tmp_path / "a"), "config", "path"]) == 0
    assert main(["config", "path", "--home", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out.split()
    assert out == [str(tmp_path / "a" / "config" / "config.toml"),
                   str(tmp_path / "b" / "config" / "config.toml")]
    assert _mode(tmp_path / "b" / "data") == 0o700


def test_unwritable_home_is_a_clean_error(tmp_path: Path, restore_umask: None,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert main(["--home", str(blocker), "config", "show"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("brain: error: ")
    assert "Traceback" not in err and str(blocker) in err
