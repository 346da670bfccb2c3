"""When does search warn that the vector store lost its vectors?"""

from __future__ import annotations

import pytest

from assistant.retrieval.coverage import vector_gap_warning


@pytest.mark.parametrize(("vectors", "chunks"), [(0, 0), (10, 10), (95, 100), (90, 100),
                                                  (12, 10)])
def test_no_warning_when_the_vectors_cover_the_index(vectors: int, chunks: int) -> None:
    assert vector_gap_warning(vectors, chunks) is None


def test_an_empty_store_means_keyword_only_search() -> None:
    warning = vector_gap_warning(0, 3)
    assert warning is not None
    assert "no vectors for the 3 indexed chunks" in warning and "keywords only" in warning
    assert "brain index --sync" in warning


def test_a_partly_emptied_store_says_how_much_is_missing() -> None:
    warning = vector_gap_warning(40, 100)
    assert warning is not None and "only 40 of 100" in warning
    assert "brain index --sync" in warning
