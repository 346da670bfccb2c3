"""Display scores and the confidence gate (including its calibration)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from assistant.retrieval.gate import (
    Evidence,
    GateThresholds,
    calibrate,
    gate_rates,
    is_low_confidence,
)
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


GATE = GateThresholds(cosine=0.35, keyword=0.5, keyword_alone=0.7)


@pytest.mark.parametrize(
    ("cosine", "keyword", "low"),
    [
        (0.6, None, False),  # strong dense match
        (0.2, 0.9, False),  # weak dense, strong keyword (exact identifier)
        (0.2, 0.3, True),  # weak both
        (0.35, 0.0, False),  # exactly at the threshold passes
        (0.3499, 0.4999, True),
        (None, None, True),  # nothing found / dense not trusted and no keyword hit
        (None, 0.6, True),  # keywords alone must clear their own, higher bar
        (None, 0.7, False),
    ],
)
def test_gate(cosine: float | None, keyword: float | None, low: bool) -> None:
    assert is_low_confidence(cosine, keyword, GATE) is low


def test_calibrate_catches_most_within_the_false_alarm_bound() -> None:
    answerable: dict[str, Sequence[Evidence]] = {
        # 50 English questions with cosines 0.50..0.99; one keyword save at cosine 0.2.
        "en": [(0.5 + i / 100, 0.0) for i in range(49)] + [(0.2, 0.9)],
        "zh": [(None, 0.4)] + [(None, 0.7)] * 49,  # no trusted cosine: keywords alone
    }
    off_corpus: dict[str, Sequence[Evidence]] = {
        "off_en": [(0.1 + i / 100, 0.6) for i in range(45)],  # 0.10..0.54, keywords 0.6
        "off_zh": [(None, 0.2)] * 10 + [(None, 0.75)],
    }
    cal = calibrate(answerable, off_corpus, max_false_alarm=0.02,
                    keyword_grid=[0.4, 0.5, 0.6, 0.65, 0.7, 0.8, 0.95])
    assert cal.worst_false_alarm <= 0.02
    t = cal.thresholds
    # One English answerable question (2% of 50) may fall under the cosine threshold; the
    # English off-corpus keyword scores (0.6) must not pass, the English save (0.9) must.
    assert 0.50 <= t.cosine <= 0.51 and 0.6 < t.keyword <= 0.9
    # Alone, keywords keep the 0.7 Chinese answers and may drop the one at 0.4 (2%).
    assert 0.2 < t.keyword_alone <= 0.7
    assert cal.catch["off_zh"] == pytest.approx(10 / 11)
    assert cal.catch["off_en"] == pytest.approx(41 / 45)  # cosines 0.10..0.50 flagged
    assert cal.false_alarm["en"] == pytest.approx(1 / 50) and cal.false_alarm["zh"] <= 0.02
    assert gate_rates(answerable, off_corpus, t) == cal
    loose = calibrate(answerable, off_corpus, max_false_alarm=0.2, keyword_grid=[0.65])
    assert loose.mean_catch > cal.mean_catch and loose.worst_false_alarm <= 0.2
    with pytest.raises(ValueError):
        calibrate(answerable, {})
