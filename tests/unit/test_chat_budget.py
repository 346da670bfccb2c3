"""Section budgets from the context window, and whole-item trimming."""

from __future__ import annotations

import pytest

from assistant.chat.budget import ContextOverflow, plan, select_by_score, select_recent


def test_caps_are_shares_of_the_window() -> None:
    budget = plan(8192, 500, answer_reserve=1024)
    assert budget.memory == int(8192 * 0.25)
    assert budget.knowledge == int(8192 * 0.45)
    assert budget.free == 8192 - 1024 - 500


def test_history_gets_the_rest_including_what_sections_left_unused() -> None:
    budget = plan(8192, 500, answer_reserve=1024)
    assert budget.history(0, 0) == 8192 - 1024 - 500
    assert budget.history(budget.memory, budget.knowledge) == (
        8192 - 1024 - 500 - budget.memory - budget.knowledge
    )


def test_a_big_message_shrinks_the_section_caps() -> None:
    budget = plan(4096, 3000, answer_reserve=512)
    assert budget.free == 4096 - 512 - 3000
    assert budget.memory + budget.knowledge <= budget.free


def test_answer_reserve_is_capped_on_small_windows() -> None:
    budget = plan(2048, 100, answer_reserve=1024)
    assert budget.answer_reserve == 512


def test_message_larger_than_the_window_overflows() -> None:
    with pytest.raises(ContextOverflow) as info:
        plan(2048, 1800, answer_reserve=1024)
    assert info.value.needed == 1800
    assert info.value.available == 2048 - 512
    assert "2048-token context window" in str(info.value)


def test_lowest_scoring_items_are_dropped_first() -> None:
    items = ["a", "b", "c", "d"]
    kept, used = select_by_score(items, [10, 10, 10, 10], [0.9, 0.2, 0.8, 0.5], cap=30)
    assert kept == [0, 2, 3]  # b has the lowest score
    assert used == 30


def test_items_are_never_cut_and_smaller_ones_fill_the_room() -> None:
    kept, used = select_by_score(["big", "small"], [50, 5], [0.9, 0.1], cap=20)
    assert kept == [1]
    assert used == 5


def test_nothing_fits_in_a_zero_budget() -> None:
    assert select_by_score(["a"], [1], [1.0], cap=0) == ([], 0)


def test_recent_history_is_a_contiguous_newest_suffix() -> None:
    # oldest … newest; the second-newest is too long, so the oldest cannot be kept either.
    count, used = select_recent([5, 100, 5], cap=20)
    assert (count, used) == (1, 5)
    assert select_recent([5, 5, 5], cap=10) == (2, 10)
    assert select_recent([], cap=10) == (0, 0)
