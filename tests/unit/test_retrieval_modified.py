"""`brain search --since/--until`: only files last modified in the range are searched."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from assistant.errors import UserError
from assistant.timerange import range_from_flags
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
