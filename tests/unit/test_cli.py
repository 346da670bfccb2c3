"""The `brain` command line: help everywhere, version, and exit codes 0 / 1 / 2."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant import __version__
from assistant.cli.main import build_parser, main


def _exit_code(argv: list[str]) -> int:
    """Run main(); argparse's --help/--version/usage errors exit via SystemExit."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse._SubParsersAction]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield action


def _command_paths() -> list[list[str]]:
    """Every command and subcommand currently registered, e.g. ["config", "show"]."""
    found: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, prefix: list[str]) -> None:
        for sub in _subparsers(parser):
            for name, child in sub.choices.items():
                found.append([*prefix, name])
                walk(child, [*prefix, name])

    walk(build_parser(), [])
    return found


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"second-brain {__version__}"


def test_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["--help"]) == 0
    out = capsys.readouterr().out
    assert "usage: brain" in out and "--home DIR" in out
    for name in ("config", "doctor"):
        assert f"    {name} " in out


def test_help_for_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    paths = _command_paths()
    assert ["config", "show"] in paths and ["doctor"] in paths
    for path in paths:
        assert _exit_code([*path, "--help"]) == 0, path
        out = capsys.readouterr().out
        assert out.startswith(f"usage: brain {' '.join(path)}"), path
        assert "--home DIR" in out, path  # --home is accepted after every command too


def test_group_without_action_shows_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["config"]) == 0
    assert capsys.readouterr().out.startswith("usage: brain config")


@pytest.mark.parametrize("argv", [
    ["no-such-command"],
    ["--no-such-option"],
    ["config", "frobnicate"],
    ["doctor", "--jsn"],
])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: brain") and "error:" in err


def test_user_error_exits_1(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[ui]\ntheme = 3\n")
    assert _exit_code(["config", "show"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ui.theme: expected string, got int 3" in err


def test_success_exits_0(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit_code(["config", "path"]) == 0


def test_installed_entry_point(tmp_path: Path) -> None:
    """The console script pip installs, as a user runs it (one subprocess for the suite)."""
    brain = Path(sys.executable).parent / "brain"
    assert brain.exists(), "run `make test` (installs the package) or `pip install -e .`"
    env = {**os.environ, "BRAIN_HOME": str(tmp_path / "h")}
    ok = subprocess.run([str(brain), "config", "show"], env=env, capture_output=True,
                        text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "[ollama]" in ok.stdout and 'model = "qwen3:4b"' in ok.stdout
    config = tmp_path / "h" / "config" / "config.toml"
    config.write_text("[retrieval]\ntop_k = 0\n")
    bad = subprocess.run([str(brain), "config", "show"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 1
    assert bad.stderr == (
        f"brain: error: {config}: retrieval.top_k: expected integer between 1 and 200, got 0\n"
    )
    assert "Traceback" not in bad.stderr
