"""RRF and recency math."""

from __future__ import annotations

import pytest

from assistant.retrieval.fusion import max_rrf, rrf
from assistant.retrieval.recency import SECONDS_PER_DAY, recency_boost


def test_rrf_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a"]], k=60)
    by_id = {f.id: f for f in fused}
    assert by_id["a"].score == pytest.approx(1 / 61 + 1 / 62)
    assert by_id["b"].score == pytest.approx(1 / 62)
    assert by_id["c"].score == pytest.approx(1 / 63 + 1 / 61)
    assert by_id["a"].ranks == (1, 2)
    assert by_id["b"].ranks == (2, None)
    assert by_id["c"].ranks == (3, 1)
    assert [f.id for f in fused] == ["a", "c", "b"]


def test_rrf_agreement_beats_a_single_first_place() -> None:
    fused = rrf([["solo", "both"], ["x", "both"]], k=60)
    assert fused[0].id == "both"


def test_rrf_ties_keep_first_appearance_and_duplicates_count_once() -> None:
    fused = rrf([["a", "a", "b"], ["b", "a"]], k=1)
    assert fused[0].id == "a"  # 1/2 + 1/3 == 1/3 + 1/2 → tie, "a" appeared first
    assert fused[0].score == pytest.approx(fused[1].score)
    assert fused[0].ranks == (1, 2)


def test_rrf_k_changes_the_balance_and_weights_apply() -> None:
    small_k = {f.id: f.score for f in rrf([["a", "b"]], k=1)}
    assert small_k["a"] / small_k["b"] == pytest.approx(3 / 2)
    weighted = rrf([["a"], ["b"]], k=60, weights=[1.0, 2.0])
    assert weighted[0].id == "b"
    with pytest.raises(ValueError):
        rrf([["a"]], k=0)
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], weights=[1.0])


def test_rrf_of_nothing_is_empty_and_max_rrf_is_first_everywhere() -> None:
    assert rrf([[], []]) == []
    assert max_rrf(2, 60) == pytest.approx(2 / 61)
    assert rrf([["a"], ["a"]], k=60)[0].score == pytest.approx(max_rrf(2, 60))


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [(0, 0.2), (3.5, 0.1), (7, 0.0), (10, 0.0), (1, 0.2 * 6 / 7)],
)
def test_recency_boost_decays_linearly_to_zero_at_the_window(
    age_days: float, expected: float
) -> None:
    mtime = NOW - age_days * SECONDS_PER_DAY
    assert recency_boost(mtime, NOW, days=7, boost=0.2) == pytest.approx(expected)


def test_recency_boost_future_mtime_counts_as_now_and_can_be_off() -> None:
    assert recency_boost(NOW + 3600, NOW) == pytest.approx(0.2)
    assert recency_boost(NOW, NOW, boost=0.0) == 0.0
    assert recency_boost(NOW, NOW, days=0) == 0.0
    assert recency_boost(NOW - SECONDS_PER_DAY, NOW, days=2, boost=0.5) == pytest.approx(0.25)
