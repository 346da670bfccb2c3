"""Display scores and the confidence gate (including its calibration)."""

from __future__ import annotations

import pytest

from assistant.retrieval.gate import choose_threshold, is_low_confidence
from assistant.retrieval.scores import (
    format_keyword,
    fused_display,
    keyword_score,
    percent,
    relative_bm25,
    term_coverage,
)


def test_term_coverage_counts_distinct_query_terms() -> None:
    assert term_coverage(["git", "stash", "git"], ["git", "stash", "pop"]) == 1.0
    assert term_coverage(["git", "rebase"], ["git", "stash"]) == 0.5
    assert term_coverage([], ["x"]) == 0.0


def test_keyword_score_is_relative_bm25_times_coverage_in_unit_range() -> None:
    assert relative_bm25(5.0, 10.0) == 0.5
    assert relative_bm25(0.0, 10.0) == 0.0
    assert relative_bm25(3.0, 0.0) == 0.0
    assert keyword_score(10.0, 10.0, 1.0) == 1.0
    assert keyword_score(10.0, 10.0, 0.25) == 0.25
    assert keyword_score(5.0, 10.0, 0.5) == 0.25
    assert 0.0 <= keyword_score(12.0, 10.0, 2.0) <= 1.0


def test_fused_display_maps_best_possible_to_one_and_never_shows_raw_rrf() -> None:
    best = 2 / 61
    assert fused_display(best, best) == 1.0
    assert fused_display(1 / 61, best) == pytest.approx(0.5)
    assert fused_display(best * 1.2, best) == 1.0  # recency boost is capped
    assert fused_display(0.01, 0.0) == 0.0


def test_percent_and_keyword_formatting() -> None:
    assert percent(0.873) == "87%"
    assert percent(-0.2) == "0%"
    assert percent(None) == "—"
    assert format_keyword(0.5) == "0.50"
    assert format_keyword(None) == "—"


@pytest.mark.parametrize(
    ("cosine", "keyword", "low"),
    [
        (0.6, None, False),  # strong dense match
        (0.2, 0.9, False),  # weak dense, strong keyword (exact identifier)
        (0.2, 0.3, True),  # weak both
        (None, None, True),  # nothing found
        (0.35, 0.0, False),  # exactly at the threshold passes
        (0.3499, 0.4999, True),
    ],
)
def test_gate(cosine: float | None, keyword: float | None, low: bool) -> None:
    assert (
        is_low_confidence(cosine, keyword, cosine_threshold=0.35, keyword_threshold=0.5) is low
    )


def test_choose_threshold_separates_answerable_from_off_corpus() -> None:
    answerable = [(0.62, 0.0), (0.55, 0.1), (0.48, 0.2), (0.30, 1.0)]  # last: keyword saves it
    off_corpus = [(0.20, 0.0), (0.25, 0.3), (0.33, 0.0), (0.50, 0.0)]  # last: a hard negative
    cal = choose_threshold(answerable, off_corpus, keyword_threshold=0.5)
    assert 0.33 < cal.threshold < 0.48
    assert cal.true_positive_rate == 1.0
    assert cal.true_negative_rate == 0.75
    assert cal.balanced_accuracy == pytest.approx(0.875)
    assert (cal.answerable, cal.unanswerable) == (4, 4)


def test_choose_threshold_over_groups_and_keyword_thresholds() -> None:
    # English: cosine separates. Chinese: cosines are noise (None), keywords separate at 0.6.
    pos = {"en": [(0.6, 0.2), (0.5, 0.9)], "zh": [(None, 0.7), (None, 0.65)]}
    neg = {"en": [(0.3, 0.55), (0.2, 0.0)], "zh": [(None, 0.55), (None, 0.1)]}
    cal = choose_threshold(pos, neg, keyword_threshold=[0.5, 0.6, 0.8])
    assert cal.keyword_threshold == 0.6 and 0.3 < cal.threshold < 0.6
    assert cal.balanced_accuracy == 1.0 and (cal.answerable, cal.unanswerable) == (4, 4)
    with pytest.raises(ValueError):
        choose_threshold(pos, {"en": neg["en"]}, keyword_threshold=0.5)


def test_choose_threshold_needs_both_sets() -> None:
    with pytest.raises(ValueError):
        choose_threshold([], [(0.1, 0.0)], keyword_threshold=0.5)
