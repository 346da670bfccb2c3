"""The memory's keyword index: the shared FTS5 `KeywordIndex`, ranking by BM25 every memory that
holds a query term found in at most `COMMON_AT` memories.

The knowledge index ranks only items that contain at least one rare query term (a speed-up for
tens of thousands of chunks). Memories are few, and conversational episodes indexed with their
neighbouring turns share many words, so that shortcut loses real matches (LoCoMo evidence
recall@10 0.775 → 0.74); here every item matching any such term is ranked.

What makes a search cost O(n) is a term that most memories hold: FTS5's `bm25()` counts every
row of each phrase in the query before it scores one (26 ms for a word in 7k of 10k memories),
and ranking sorts every match. A term is therefore first probed with a LIMIT of `COMMON_AT + 1`
rows (bounded work, whatever n); a term in more memories than that is left out of the query.
Its BM25 weight is small by then (the IDF of a term in 500 of 10k memories is 2.9 against 7.6
for one in 5), and below 2 × `COMMON_AT` memories — LoCoMo's conversations have a few hundred —
FTS5 already clamps the IDF of such a term (in half the memories or more) to ~0: the ranking
there is unchanged. A query made only of such terms has no keyword candidates; the dense
search ranks it alone (issue 25: p95 234 ms at 10k memories on a loaded machine).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection

from indexing.keywords import KeywordIndex, KeywordIndexError
from indexing.tokenize import query_tokens

# Above this many memories holding it, a query term is too common to rank by; see the docstring.
COMMON_AT = 500


def _phrase(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


class MemoryKeywords(KeywordIndex):
    def search(
        self, query: str, k: int, *, ids: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        tokens = list(dict.fromkeys(query_tokens(query)))
        if not tokens or k <= 0 or (ids is not None and not ids):
            return []
        fts, id_map = self._fts, self._map
        try:
            tokens = [t for t in tokens if self._holders_at_most(t, COMMON_AT)]
            if not tokens:
                return []
            where = f"{fts} MATCH ?"
            params: list[object] = [" OR ".join(_phrase(t) for t in tokens)]
            if ids is not None:
                where += " AND m.id IN (SELECT value FROM json_each(?))"
                params.append(json.dumps([str(i) for i in ids]))
            params.append(k)
            sql = (
                f"SELECT m.id, -bm25({fts}) FROM {fts} JOIN {id_map} AS m "
                f"ON m.rowid = {fts}.rowid WHERE {where} ORDER BY bm25({fts}) LIMIT ?"
            )
            rows = self._conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            raise KeywordIndexError(f"memory keyword search failed ({exc})") from exc
        return [(str(item_id), float(score)) for item_id, score in rows]

    def _holders_at_most(self, token: str, limit: int) -> bool:
        """Whether at most `limit` memories hold `token`: reads at most `limit + 1` rows of its
        posting list (fts5vocab's count walks all of it)."""
        row = self._conn.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {self._fts} WHERE {self._fts} MATCH ? "
            "LIMIT ?)", (_phrase(token), limit + 1)).fetchone()
        return bool(0 < row[0] <= limit)
