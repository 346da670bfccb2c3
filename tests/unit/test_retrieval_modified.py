"""`brain search --since/--until`: only files last modified in the range are searched."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from assistant.errors import UserError
from assistant.timeflags import range_from_flags
from tests.fakes import HashEmbedder
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk
from tests.unit.test_retrieval_hybrid import retriever

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=UTC)
MARCH_10 = datetime(2026, 3, 10, 12, tzinfo=UTC).timestamp()
JANUARY = datetime(2026, 1, 5, 12, tzinfo=UTC).timestamp()


def build() -> FakeKnowledgeBase:
    kb = FakeKnowledgeBase(HashEmbedder())
    kb.add(make_chunk("/notes/new-tar.md", "tar: create and extract archives", mtime=MARCH_10),
           make_chunk("/notes/old-tar.md", "tar: extract archive files", mtime=JANUARY, index=1),
           make_chunk("/notes/zip.md", "zip: compress files", mtime=MARCH_10, index=2))
    return kb


def test_only_files_modified_in_the_range() -> None:
    kb = build()
    result = retriever(kb).search("tar archive", modified=range_from_flags("2w", None, NOW))
    assert {h.chunk.source for h in result.hits} <= {"/notes/new-tar.md", "/notes/zip.md"}
    assert result.hits[0].chunk.source == "/notes/new-tar.md"
    older = retriever(kb).search("tar archive", modified=range_from_flags(None, "2026-02", NOW))
    assert {h.chunk.source for h in older.hits} == {"/notes/old-tar.md"}


def test_combined_with_in_path() -> None:
    kb = build()
    result = retriever(kb).search("files", in_path="/notes/zip.md",
                                  modified=range_from_flags("2026-03-01", None, NOW))
    assert {h.chunk.source for h in result.hits} == {"/notes/zip.md"}


def test_a_range_with_no_file_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="no indexed files were modified"):
        retriever(build()).search("tar", modified=range_from_flags("2020", "2020", NOW))


# --- a time phrase in the query (assistant/retrieval/dated.py) --------------------------------

def test_a_phrase_in_the_query_narrows_the_dates_and_leaves_the_text() -> None:
    from assistant.retrieval.dated import search_dated

    found = search_dated(retriever(build()), "tar archive from last week", now=NOW)
    assert found.applied and found.time_range is not None
    assert found.time_range.origin == "query" and found.time_range.phrase == "from last week"
    assert found.time_range.since == datetime(2026, 3, 9, tzinfo=UTC)
    assert {h.chunk.source for h in found.result.hits} <= {"/notes/new-tar.md", "/notes/zip.md"}
    assert found.result.hits[0].chunk.source == "/notes/new-tar.md"
    assert found.result.query == "tar archive from last week"  # as typed
    assert "last week" not in found.result.search_query  # the phrase left the text
    assert found.time_range_json() == {
        "since": "2026-03-09T00:00:00+00:00", "until": "2026-03-16T00:00:00+00:00",
        "phrase": "from last week", "origin": "query", "applied": True}
    assert found.describe() == "files modified 2026-03-09 → 2026-03-15 (from last week)"


def test_a_chinese_phrase_narrows_the_dates_too() -> None:
    from assistant.retrieval.dated import search_dated

    found = search_dated(retriever(build()), "上周的 tar archive", now=NOW)
    assert found.applied and found.time_range is not None
    assert found.time_range.phrase == "上周"
    assert "/notes/old-tar.md" not in {h.chunk.source for h in found.result.hits}


def test_nothing_modified_then_searches_every_date_with_the_words_as_typed() -> None:
    """"find files changed in the past year" may be the topic: with no file in that range the
    phrase is not a filter, and the result says so."""
    from assistant.retrieval.dated import search_dated

    found = search_dated(retriever(build()), "tar archive in 2019", now=NOW)
    assert found.time_range is not None and not found.applied
    assert "/notes/old-tar.md" in {h.chunk.source for h in found.result.hits}
    assert found.result.search_query == "tar archive in 2019"
    assert (found.time_range_json() or {}).get("applied") is False
    assert found.describe() == ("no files modified 2019-01-01 → 2019-12-31 (in 2019): "
                                "all dates searched")


def test_flags_win_over_a_phrase_and_an_empty_flag_range_stays_an_error() -> None:
    from assistant.retrieval.dated import search_dated

    flags = range_from_flags("2026-01-01", "2026-01-31", NOW)
    found = search_dated(retriever(build()), "tar archive last week", now=NOW, explicit=flags)
    assert found.time_range is flags and found.applied
    assert {h.chunk.source for h in found.result.hits} == {"/notes/old-tar.md"}
    with pytest.raises(UserError, match="no indexed files were modified"):
        search_dated(retriever(build()), "tar last week", now=NOW,
                     explicit=range_from_flags("2020", "2020", NOW))


def test_phrases_off_searches_every_date() -> None:
    from assistant.retrieval.dated import search_dated

    found = search_dated(retriever(build()), "tar archive last week", now=NOW, phrases=False)
    assert found.time_range is None and not found.applied
    assert "/notes/old-tar.md" in {h.chunk.source for h in found.result.hits}


def test_a_query_that_is_only_a_phrase_searches_its_words_within_its_dates() -> None:
    from assistant.retrieval.dated import search_dated

    for query in ("last week?", "  last week  ", "上周的?"):
        found = search_dated(retriever(build()), query, now=NOW)
        assert found.applied, query
        assert found.result.search_query == query.strip(), query  # not "?" alone
        assert found.result.query == query.strip()
        assert "/notes/old-tar.md" not in {h.chunk.source for h in found.result.hits}


def test_the_retrieval_log_keeps_the_query_as_typed(tmp_path) -> None:
    from assistant.config import RetrievalConfig
    from assistant.retrieval.dated import search_dated
    from assistant.retrieval.hybrid import HybridRetriever
    from assistant.retrieval.log import RetrievalLog

    log = RetrievalLog.open(tmp_path / "log.sqlite3")
    kb = build()
    logged = HybridRetriever(kb, kb.embedder, RetrievalConfig(), log=log,
                             clock=lambda: NOW.timestamp())
    try:
        found = search_dated(logged, "tar archive from last week", now=NOW)
        assert found.result.log_id is not None
        [entry] = log.recent(1)
        assert entry.query == "tar archive from last week"
        assert entry.search_query == "tar archive"
    finally:
        log.close()


def test_a_range_empty_under_in_says_so() -> None:
    from assistant.retrieval.dated import search_dated

    found = search_dated(retriever(build()), "tar archive last week", now=NOW,
                         in_path="/notes/old-tar.md")
    assert not found.applied
    assert found.describe().startswith("no files under /notes/old-tar.md modified 2026-03-09")
