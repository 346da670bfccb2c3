"""Retrieval log: append, feedback, export of 👎 queries as eval cases."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant.errors import UserError
from assistant.retrieval.hit import RetrievalResult, SearchHit
from assistant.retrieval.log import RetrievalLog
from tests.fixtures.retrieval import make_chunk


def result(query: str, *sources: str, low: bool = False) -> RetrievalResult:
    hits = [
        SearchHit(
            chunk=make_chunk(s, f"secret text of {s}"),
            rank=i,
            score=0.5,
            fused=0.02,
            rrf=0.02,
            cosine=0.61,
            dense_rank=i,
            bm25=None,
            keyword=None,
        )
        for i, s in enumerate(sources, start=1)
    ]
    return RetrievalResult(query, hits, low, {"embed": 1.5, "total": 3.0}, search_query=query)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[RetrievalLog]:
    with RetrievalLog(tmp_path / "data" / "retrieval_log.sqlite3") as opened:
        yield opened


def test_append_and_read_back_newest_first(log: RetrievalLog) -> None:
    first = log.append(result("tar extract", "/n/tar.md"), origin="cli", in_path="/n")
    second = log.append(result("zip", "/n/zip.md", "/n/tar.md", low=True), origin="chat")
    entries = log.recent(10)
    assert [e.id for e in entries] == [second, first]
    newest = entries[0]
    assert newest.origin == "chat" and newest.low_confidence
    assert [h.source for h in newest.hits] == ["/n/zip.md", "/n/tar.md"]
    assert newest.hits[0].cosine == 0.61 and newest.hits[0].keyword is None
    assert newest.timings == {"embed": 1.5, "total": 3.0}
    assert entries[1].in_path == "/n"
    assert log.path.stat().st_mode & 0o077 == 0
    assert stat.S_IMODE(log.path.parent.stat().st_mode) == 0o700
    assert b"secret text" not in log.path.read_bytes()


def test_rate_and_export_disliked(log: RetrievalLog, tmp_path: Path) -> None:
    a = log.append(result("how to undo a commit", "/n/git-commit.md"))
    b = log.append(result("list hidden files", "/n/ls.md"))
    c = log.append(result("how to undo a commit", "/n/git-log.md"))
    log.rate(a, -1)
    log.rate(b, +1)
    log.rate(c, -1, correct_sources=["/n/git-reset.md", "/n/git-revert.md"])
    disliked = log.recent(10, disliked=True)
    assert [e.id for e in disliked] == [c, a]
    assert disliked[0].correct_sources == ["/n/git-reset.md", "/n/git-revert.md"]
    rated = log.get(b)
    assert rated is not None and rated.rating == 1
    out = tmp_path / "cases.jsonl"
    assert log.export_disliked(out) == 1  # one case per distinct query, newest rating wins
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines == [
        {"query": "how to undo a commit", "expected": ["/n/git-reset.md", "/n/git-revert.md"]}
    ]


def test_rate_rejects_bad_values_and_unknown_entries(log: RetrievalLog) -> None:
    entry = log.append(result("q", "/n/a.md"))
    with pytest.raises(ValueError):
        log.rate(entry, 0)
    with pytest.raises(UserError, match="no retrieval log entry 999"):
        log.rate(999, -1)


def test_export_to_an_unwritable_place_is_a_clear_error(log: RetrievalLog, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot write"):
        log.export_disliked(tmp_path / "missing-dir" / "cases.jsonl")


def test_corrupt_log_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(UserError, match="retrieval log"):
        RetrievalLog(path)
