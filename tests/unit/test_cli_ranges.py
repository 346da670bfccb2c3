"""Every numeric flag is range-checked by argparse: one usage line, rc 2, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.cli.common import top_k_error
from assistant.cli.main import main
from indexing.chroma_clients import guard
from indexing.vector_errors import VectorStoreError

TOP_K = [
    ("search", "q"),
    ("sessions", "search", "q"),
    ("memory", "search", "q"),
    ("eval", "golden.jsonl"),
]
BAD_TOP_K = ["0", "-1", "10000000", "ten"]
COUNTS = [
    ("log", "--limit"),
    ("sessions", "list", "--limit"),
    ("log", "rate", "--good"),  # the entry number
]


def _usage_error(argv: list[str], home: Path, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--home", str(home)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "aside" not in err
    [line] = [line for line in err.splitlines() if "error:" in line]
    return line


@pytest.mark.parametrize("command", TOP_K)
@pytest.mark.parametrize("value", BAD_TOP_K)
def test_top_k_out_of_range_is_a_usage_error(
    command: tuple[str, ...], value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _usage_error([*command, "--top-k", value], tmp_path / "home", capsys)
    assert "--top-k" in line
    assert ("from 1 to 200" in line) if value != "ten" else ("whole number" in line)
    assert not (tmp_path / "home").exists()  # refused before anything was opened


@pytest.mark.parametrize("argv", COUNTS)
@pytest.mark.parametrize("value", ["0", "-5", str(2**63)])
def test_counts_out_of_range_are_usage_errors(
    argv: tuple[str, ...], value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*argv[:-1], value, argv[-1]] if argv[-1] == "--good" else [*argv, value]
    line = _usage_error(args, tmp_path / "home", capsys)
    assert ("a smaller number" if value == str(2**63) else "at least 1") in line


def test_a_store_error_that_is_not_damage_never_advises_moving_the_store_aside() -> None:
    def query() -> None:
        raise ValueError("Number of requested results 10000000 is too large")

    with pytest.raises(VectorStoreError) as caught:
        guard("/tmp/vectors", "query", query)
    assert "aside" not in (caught.value.hint or "") and "doctor" in (caught.value.hint or "")


@pytest.mark.parametrize("value", [0, -1, 10_000_000, "5", True, 2.5])
def test_a_queries_line_top_k_has_the_same_range(value: object) -> None:
    assert top_k_error(value) == "top_k must be a whole number from 1 to 200"
    assert top_k_error(None) is None and top_k_error(200) is None


EMPTY = [
    ("ask", "q", "--model", ""),
    ("ask", "q", "--persona", " "),
    ("ask", "q", "--session", ""),
    ("search", "q", "--since", ""),
    ("search", "q", "--until", ""),
    ("search", "q", "--in", ""),
    ("sessions", "search", "q", "--since", ""),
    ("sessions", "search", "q", "--until", ""),
    ("sessions", "rename", "abc", ""),
    ("sessions", "export", "abc", "-o", ""),
    ("memory", "add", ""),
    ("memory", "add", "likes tea", "--key", ""),
    ("memory", "add", "likes tea", "--at", ""),
    ("memory", "edit", "abc", "  "),
    ("memory", "import", ""),
    ("index", ""),
    ("folders", "rm", ""),
    ("log", "--export", ""),
    ("eval", ""),
    ("doctor", "--home", ""),
]


@pytest.mark.parametrize("argv", EMPTY, ids=" ".join)
def test_an_empty_value_is_a_usage_error(
    argv: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*argv] if "--home" in argv else [*argv, "--home", str(tmp_path / "home")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    [line] = [line for line in err.splitlines() if "error:" in line]
    assert "expected a value, got an empty string" in line and "Traceback" not in err
    assert not (tmp_path / "home").exists()
