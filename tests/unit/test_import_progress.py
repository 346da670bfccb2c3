"""The import progress bar says what it counts and ends its line (issue 23, point 9)."""

from __future__ import annotations

import pytest

from assistant.cli.memory_cmd import Progress


def test_sessions_import_progress_counts_turns_and_ends_its_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    progress = Progress("turns")
    progress(3, 10)
    progress.finish()
    err = capsys.readouterr().err
    assert "3/10 turns" in err and "lines" not in err
    assert err.endswith("\n")
    progress.finish()  # a second finish adds no blank line
    assert capsys.readouterr().err == ""
