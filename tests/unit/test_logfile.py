"""The one log file (assistant/logfile.py): private, created on the first record only, named
per process, holding the traceback of every bug, found by `brain doctor` and the app."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path

from assistant.doctor import _log_check
from assistant.logfile import log_file, recent_errors, tail
from assistant.paths import resolve_paths

ROOT = Path(__file__).resolve().parents[2]

# A command whose handler is a bug: the CLI must print one line and log the traceback.
BUGGY = """
import sys
import assistant.cli.folders_cmd as folders

def list_folders(args):
    raise RuntimeError("the frobnicator broke")

folders.list_folders = list_folders
from assistant.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def run(home: Path, script: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script, "--home", str(home), *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_clean_command_leaves_no_log_file(tmp_path: Path) -> None:
    done = run(tmp_path / "home", "import sys\nfrom assistant.cli.main import main\n"
               "sys.exit(main(sys.argv[1:]))", "folders")
    assert done.returncode == 0, done.stderr
    assert not log_file(resolve_paths(tmp_path / "home")).exists()


def test_a_bug_is_one_line_for_the_user_and_a_traceback_in_the_private_log(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run(home, BUGGY, "folders")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    path = log_file(resolve_paths(home))
    assert done.stderr.startswith("brain: internal error: RuntimeError: the frobnicator broke")
    assert str(path) in done.stderr
    text = path.read_text()
    assert "Traceback (most recent call last)" in text
    assert "the frobnicator broke" in text
    assert " cli folders ERROR assistant.cli: brain folders failed" in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # Two runs append to the same file; doctor reports the errors and where they are.
    run(home, BUGGY, "folders")
    errors = recent_errors(path)
    assert len(errors) == 2 and errors[-1].endswith("assistant.cli: brain folders failed")
    check = _log_check(resolve_paths(home))
    assert not check.ok and not check.essential
    assert "2 errors in the last 24 h" in check.detail and str(path) in check.hint
    # A day later the same file is no news.
    later = _log_check(resolve_paths(home), now=time.time() + 25 * 3600)
    assert later.ok and "no error in the last 24 h" in later.detail


def test_tail_keeps_the_newest_lines_and_drops_a_cut_first_line(tmp_path: Path) -> None:
    path = tmp_path / "brain.log"
    path.write_text("".join(f"line {i:05d}\n" for i in range(10_000)))
    lines = tail(path, max_bytes=1000)
    assert lines[-1] == "line 09999"
    assert all(line.startswith("line ") and len(line) == 10 for line in lines)
    assert tail(tmp_path / "missing.log") == []
