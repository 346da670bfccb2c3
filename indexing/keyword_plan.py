"""Which query terms a keyword search scores, and which items it ranks at all.

BM25's cost is per matching item: walking FTS5's posting lists is cheap (~2 ms for 17k rows
at 32k items), computing BM25 and sorting is ~1-2 us a row. A query of common words matches
most of a large index, so its cost would grow with the index (56 ms for 'review note' at 31k
chunks). The plan bounds the rows scored by the rarity of the query's terms; the terms that
refine the ranking still all count in the score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Query terms found in at least this share of items only refine the ranking of items that
# match a rarer term.
COMMON_SHARE = 0.05
# ...but only in indexes this large: below it ranking every match is fast anyway (p95 < 10 ms),
# and exact BM25 matters more for small sets such as memories.
PRUNE_MIN_ITEMS = 10_000


def fts_phrase(token: str) -> str:
    # A double-quoted FTS5 string is always a plain term; embedded quotes are doubled.
    return '"' + token.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class SearchPlan:
    match: str  # the FTS5 query whose phrases' BM25 is summed
    candidates: str | None  # an FTS5 query: only items it matches are ranked (None: all)


def _any(terms: Sequence[str]) -> str:
    return " OR ".join(fts_phrase(t) for t in terms)


def plan_search(tokens: Sequence[str], df: Mapping[str, int], total: int) -> SearchPlan | None:
    """The plan for `tokens` (each found in `df[t] > 0` of `total` items); None: no keyword
    result is worth computing."""
    large = total >= PRUNE_MIN_ITEMS
    # FTS5's BM25 clamps the IDF of a term found in half the items or more to ~1e-6, so such
    # terms change no score: leave them out to save work.
    useful = [t for t in tokens if df[t] * 2 < total]
    if not useful:
        if large:
            # Every term is in half the items or more: all scores are ~1e-6 times a tf/length
            # ratio, noise that the fusion's min-max normalisation would stretch into a
            # full-weight keyword signal, at the cost of scoring most of the index (56 ms at
            # 31k chunks). Such words say nothing about which item is meant: the dense list
            # alone ranks them.
            return None
        return SearchPlan(_any(tokens), None)
    if not large:
        return SearchPlan(_any(useful), None)
    rare = [t for t in useful if df[t] < COMMON_SHARE * total]
    if rare:
        # Only items containing a rare term are ranked (still by BM25 over all useful terms):
        # an item that matches only words found in 5%+ of the index is not a keyword hit worth
        # showing. On the tldr golden queries this left every top 10 unchanged and cut p95
        # from ~30 ms to ~7 ms on 30k chunks.
        if len(rare) == len(useful):
            return SearchPlan(_any(useful), None)
        return SearchPlan(_any(useful), _any(rare))
    if len(useful) == 1:
        return SearchPlan(_any(useful), None)  # at most half the index, and no rarer word to use
    # No rare term: the items holding every useful term are the ones the query describes best
    # (each term in 5-50% of the items, so together in few of them when the terms are
    # independent); an item holding one common word of several is no keyword hit either. An
    # AND query sums the same phrases' BM25 as the OR one, and FTS5 walks it by seeking.
    return SearchPlan(" AND ".join(fts_phrase(t) for t in useful), None)
