"""`--in PATH` resolution against the knowledge base's sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.errors import UserError
from assistant.retrieval.filters import allowed_sources, normalise_filter
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk


@pytest.fixture
def kb() -> FakeKnowledgeBase:
    return FakeKnowledgeBase().add(
        make_chunk("/notes/work/plan.md", "quarterly plan"),
        make_chunk("/notes/work/todo.txt", "todo list"),
        make_chunk("/notes/home/recipes.md", "bread recipe"),
        make_chunk("/notes/home/recipes.md", "second part", index=1),
        make_chunk("/code/app/main.py", "def main(): pass", root="/code"),
    )


def test_relative_paths_resolve_against_the_working_directory(tmp_path: Path) -> None:
    assert normalise_filter("work", cwd=Path("/notes")) == "/notes/work"
    assert normalise_filter("../code", cwd=Path("/notes")) == "/code"
    assert normalise_filter("/notes/home/", cwd=tmp_path) == "/notes/home"


def test_globs_relative_absolute_and_bare(tmp_path: Path) -> None:
    assert normalise_filter("/notes/*.md") == "/notes/*.md"
    assert normalise_filter("work/*.md", cwd=Path("/notes")) == "/notes/work/*.md"
    assert normalise_filter("*.md") == "*.md"  # the knowledge base matches file names


def test_home_is_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/notes")
    assert normalise_filter("~/work") == "/notes/work"


def test_allowed_sources_folder_file_and_glob(kb: FakeKnowledgeBase) -> None:
    assert allowed_sources(kb, "/notes/work") == ["/notes/work/plan.md", "/notes/work/todo.txt"]
    assert allowed_sources(kb, "recipes.md", cwd=Path("/notes/home")) == ["/notes/home/recipes.md"]
    assert allowed_sources(kb, "*.md") == ["/notes/home/recipes.md", "/notes/work/plan.md"]
    assert allowed_sources(kb, "/code/**/*.py") == ["/code/app/main.py"]
    # A folder name prefix is not a folder: /notes/wor must not match /notes/work.
    with pytest.raises(UserError):
        allowed_sources(kb, "/notes/wor")


def test_filters_matching_nothing_or_empty_are_clear_errors(kb: FakeKnowledgeBase) -> None:
    with pytest.raises(UserError, match="no indexed files under '/elsewhere'"):
        allowed_sources(kb, "/elsewhere")
    with pytest.raises(UserError, match="empty"):
        allowed_sources(kb, "  ")
