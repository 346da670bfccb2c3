"""Mapping the [n] an answer uses back to the numbered sources."""

from __future__ import annotations

from assistant.chat.citations import cited_numbers, mark_cited
from assistant.sessions.turn import Source
from tests.fixtures.chat import knowledge_item


def test_single_grouped_and_ranged_citations() -> None:
    answer = "Use stash [2]. Or worktrees [1][3]. See also [4, 5] and [6-8]."
    assert cited_numbers(answer) == [2, 1, 3, 4, 5, 6, 7, 8]


def test_code_and_indexing_are_not_citations() -> None:
    answer = (
        "Index with `items[1]` or:\n```python\nvalue = data[2]\n```\n"
        "matrix[3] is not one either; [link](http://x) neither; but this is [4]."
    )
    assert cited_numbers(answer) == [4]


def test_repeated_citations_are_listed_once_in_first_use_order() -> None:
    assert cited_numbers("[2] then [1] then [2] again [1]") == [2, 1]


def test_mark_cited_sets_flags_and_reports_invented_numbers() -> None:
    sources = [Source(n, knowledge_item(n)) for n in (1, 2, 3)]
    marked, invented = mark_cited(sources, "Answer from [3] and [1], plus [9].")
    assert [(s.n, s.cited) for s in marked] == [(1, True), (2, False), (3, True)]
    assert marked[0].item.chunk_id == "chunk-1"
    assert invented == [9]


def test_an_answer_without_citations_cites_nothing() -> None:
    sources = [Source(1, knowledge_item(1))]
    marked, invented = mark_cited(sources, "I could not find that in your notes.")
    assert not any(s.cited for s in marked) and invented == []


def test_strip_citations_keeps_code_and_text() -> None:
    from assistant.chat.citations import strip_citations

    answer = "Use stash [1]. Then pop it [2][3]; see `arr[1]` and\n```\nx[2]\n```\nDone [4-5]."
    assert strip_citations(answer) == (
        "Use stash. Then pop it; see `arr[1]` and\n```\nx[2]\n```\nDone."
    )
