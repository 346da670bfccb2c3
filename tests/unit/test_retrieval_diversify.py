"""The per-file cap: at most N chunks of one file in the top-k, the rest folded as a count."""

from __future__ import annotations

from assistant.retrieval.diversify import cap_per_file


def _src(item: str) -> str:
    return item.split("#")[0]


def test_each_file_keeps_its_best_chunks_and_folds_the_rest() -> None:
    ranked = ["kill#1", "kill#2", "kill#3", "pkill#1", "kill#4", "top#1", "pkill#2"]
    got = cap_per_file(ranked, top_k=4, per_file=2, source=_src)
    assert got == [("kill#1", 2), ("kill#2", 0), ("pkill#1", 1), ("top#1", 0)]


def test_one_per_file_gives_distinct_files_in_rank_order() -> None:
    ranked = ["a#1", "a#2", "b#1", "a#3", "c#1"]
    assert cap_per_file(ranked, top_k=3, per_file=1, source=_src) == [
        ("a#1", 2), ("b#1", 0), ("c#1", 0)
    ]


def test_no_cap_and_edge_cases() -> None:
    ranked = ["a#1", "a#2", "a#3"]
    assert cap_per_file(ranked, top_k=2, per_file=0, source=_src) == [("a#1", 0), ("a#2", 0)]
    assert cap_per_file(ranked, top_k=0, per_file=2, source=_src) == []
    assert cap_per_file([], top_k=5, per_file=2, source=_src) == []


def test_the_cap_never_starves_the_list() -> None:
    """One big document and nothing else (a single PDF, `--in file`): its folded chunks fill
    the slots no other file can, in rank order."""
    assert cap_per_file(["a#1", "a#2", "a#3", "a#4"], top_k=3, per_file=1, source=_src) == [
        ("a#1", 1), ("a#2", 0), ("a#3", 0)
    ]
    assert cap_per_file(["a#1", "a#2", "b#1", "a#3"], top_k=4, per_file=1, source=_src) == [
        ("a#1", 0), ("a#2", 0), ("b#1", 0), ("a#3", 0)
    ]
    assert cap_per_file(["a#1", "a#2", "b#1", "a#3"], top_k=3, per_file=1, source=_src) == [
        ("a#1", 1), ("a#2", 0), ("b#1", 0)
    ]
