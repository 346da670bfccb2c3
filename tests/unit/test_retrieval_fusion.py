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


def test_convex_fusion_normalises_each_list_and_weighs_them() -> None:
    from assistant.retrieval.fusion import convex

    dense = [("a", 0.9), ("b", 0.5), ("c", 0.1)]
    keyword = [("c", 12.0), ("d", 3.0), ("a", 3.0)]
    fused = {f.id: f for f in convex([dense, keyword], [0.6, 0.4])}
    assert fused["a"].score == pytest.approx(0.6 * 1.0 + 0.4 * 0.0)
    assert fused["b"].score == pytest.approx(0.6 * 0.5)
    assert fused["c"].score == pytest.approx(0.4 * 1.0)
    assert fused["a"].ranks == (1, 3) and fused["d"].ranks == (None, 2)
    # Weights are shares: scaling both changes nothing; the best possible score is 1.
    again = {f.id: f.score for f in convex([dense, keyword], [3.0, 2.0])}
    assert again == pytest.approx({k: f.score for k, f in fused.items()})
    assert convex([[("x", 0.3)], [("x", 7.0)]], [0.6, 0.4])[0].score == pytest.approx(1.0)
    # A flat list (all equal) puts every item at 1; duplicates count once, at their best.
    flat = convex([[("p", 0.5), ("q", 0.5), ("p", 0.1)]], [1.0])
    assert [(f.id, f.score, f.ranks) for f in flat] == [("p", 1.0, (1,)), ("q", 1.0, (2,))]
    assert convex([[], []], [0.5, 0.5]) == []
    with pytest.raises(ValueError):
        convex([dense], [0.5, 0.5])
    with pytest.raises(ValueError):
        convex([dense, keyword], [0.0, 0.0])


def test_keep_within_moves_an_item_up_to_a_position() -> None:
    from assistant.retrieval.fusion import keep_within

    items = list("abcdefghijkl")
    moved = keep_within(items, 11, 10)
    assert moved[9] == "l" and moved[:9] == items[:9] and moved[10:] == ["j", "k"]
    assert keep_within(items, 3, 10) == items  # already within: unchanged
