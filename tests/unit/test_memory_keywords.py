"""The memory keyword search's work is bounded: a term most memories hold is not ranked by
(issue 25: bm25() over such a term cost O(n) on every memory search)."""

from __future__ import annotations

import sqlite3

from assistant.memory.keywords import COMMON_AT, MemoryKeywords


def _index(count: int) -> tuple[sqlite3.Connection, MemoryKeywords]:
    conn = sqlite3.connect(":memory:")
    index = MemoryKeywords(conn, "memory_fts")
    # Every memory holds "coffee"; each has its own word too ("wordNaN" spelled in letters).
    index.add((f"m{i}", f"The user likes coffee and {_word(i)}") for i in range(count))
    conn.commit()
    return conn, index


def _word(i: int) -> str:
    return "zq" + "".join("abcdefghij"[int(d)] for d in str(i))


def _vm_steps(conn: sqlite3.Connection, index: MemoryKeywords, query: str) -> int:
    """SQLite virtual-machine steps (in hundreds) that one search runs: every row a statement
    reads or sorts costs a few, so a scan of all memories shows up as steps growing with them."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn.set_progress_handler(tick, 100)
    try:
        index.search(query, 50)
    finally:
        conn.set_progress_handler(None, 0)
    return steps[0]


def test_search_work_does_not_grow_with_the_memories_holding_a_common_term() -> None:
    small_conn, small = _index(2 * COMMON_AT)
    large_conn, large = _index(16 * COMMON_AT)
    query = f"coffee {_word(7)}"
    small_steps = _vm_steps(small_conn, small, query)
    large_steps = _vm_steps(large_conn, large, query)
    # Ranking every "coffee" memory (the old query) took 8x the steps at 8x the memories.
    assert large_steps < 1.5 * small_steps + 20, (small_steps, large_steps)
    assert large.search(query, 5)[0][0] == "m7"


def test_a_term_in_at_most_common_at_memories_still_ranks_them() -> None:
    _, index = _index(COMMON_AT)
    found = index.search("coffee", 1000)
    assert len(found) == COMMON_AT  # every memory holding it is a candidate, as before


def test_a_query_of_only_common_terms_has_no_keyword_candidates() -> None:
    _, index = _index(COMMON_AT + 1)
    assert index.search("coffee", 10) == []
    assert index.search(f"coffee {_word(3)}", 10)[0][0] == "m3"
