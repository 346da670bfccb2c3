"""A persistent, incremental BM25 keyword index on SQLite FTS5.

Text is analysed by `indexing.tokenize` (stemming, code identifiers, jieba for Chinese) and
stored as space-joined tokens. The FTS5 table uses the `ascii` tokenizer with `-`, `_` and `.`
as token characters: it treats every non-ASCII character as part of a token and splits only on
ASCII spaces, so each of our tokens (`git-stash`, `config.toml`, `文件`) stays exactly one FTS
token and FTS5 never re-analyses what `tokenize` decided.

The index lives in the caller's SQLite connection and does not commit by itself (unless made
with `autocommit=True`), so the sync can update the manifest and the keyword index in one
transaction: a crash leaves both old or both new.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Collection, Iterable, Sequence

from indexing.errors import HintedError
from indexing.keyword_plan import plan_search
from indexing.tokenize import TOKENIZER_VERSION, query_tokens, tokenize

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# Rows per executemany / ids per `IN (...)` lookup: well under SQLite's variable limit.
_BATCH = 500


class KeywordIndexError(HintedError):
    """The keyword index cannot be used (bad table name, corrupted database)."""


class KeywordIndex:
    """BM25 search over `(id, text)` items; ids are the caller's string ids (chunk ids)."""

    def __init__(
        self, conn: sqlite3.Connection, table: str = "chunk_fts", *, autocommit: bool = False
    ) -> None:
        if not _TABLE_NAME.fullmatch(table):
            raise KeywordIndexError(f"invalid keyword table name: {table!r}")
        self._conn = conn
        self._fts = table
        self._map = f"{table}_ids"
        self._meta = f"{table}_meta"
        self._vocab = f"{table}_vocab"
        self._autocommit = autocommit
        # `count()` as last read, with the database state it was read in (see `_total`).
        self._counted: tuple[tuple[int, int], int] | None = None
        self._create()

    # -- schema -----------------------------------------------------------------------------

    def _create(self) -> None:
        try:
            self._conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._fts} USING fts5("
                "tokens, tokenize = \"ascii tokenchars '-_.'\")"
            )
            # FTS5 rowids are integers; this side table maps our string ids onto them.
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._map} "
                "(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE)"
            )
            self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self._meta} (key TEXT PRIMARY KEY, value TEXT)"
            )
            # Document frequencies per term, read by `search` to plan the query.
            self._conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._vocab} "
                f"USING fts5vocab({self._fts}, 'row')"
            )
            recorded = self._conn.execute(
                f"SELECT 1 FROM {self._meta} WHERE key = 'tokenizer'"
            ).fetchone()
            if recorded is None:
                outside = not self._conn.in_transaction
                # OR IGNORE: another connection (thread or process) opening the same new
                # index may have recorded it since the SELECT (a UNIQUE failure seen in the TUI
                # when a CLI command created the database at the same moment).
                self._conn.execute(
                    f"INSERT OR IGNORE INTO {self._meta}(key, value) VALUES ('tokenizer', ?)",
                    (str(TOKENIZER_VERSION),),
                )
                # Setting up a new index must not leave a transaction open that the caller
                # did not start (a later BEGIN would fail); inside theirs, it stays theirs.
                if outside:
                    self._conn.commit()
        except sqlite3.DatabaseError as exc:
            raise KeywordIndexError(f"cannot open the keyword index ({exc})") from exc

    def _maybe_commit(self) -> None:
        if self._autocommit:
            self._conn.commit()

    @property
    def stale(self) -> bool:
        """True when the stored tokens came from another tokenizer version: rebuild needed."""
        row = self._conn.execute(
            f"SELECT value FROM {self._meta} WHERE key = 'tokenizer'"
        ).fetchone()
        return row is None or row[0] != str(TOKENIZER_VERSION)

    # -- writes -----------------------------------------------------------------------------

    def add(self, items: Iterable[tuple[str, str]]) -> int:
        """Index `(id, text)` pairs; an id already present has its text replaced.

        Returns the number of items written.
        """
        written = 0
        batch: list[tuple[str, str]] = []
        for item in items:
            batch.append(item)
            if len(batch) >= _BATCH:
                written += self._add_batch(batch)
                batch = []
        if batch:
            written += self._add_batch(batch)
        self._maybe_commit()
        return written

    def _add_batch(self, batch: Sequence[tuple[str, str]]) -> int:
        # The last text wins when one batch names an id twice, like repeated single adds.
        latest = {str(item_id): text for item_id, text in batch}
        ids = list(latest)
        self._delete_ids(ids)
        cur = self._conn.cursor()
        cur.executemany(f"INSERT INTO {self._map}(id) VALUES (?)", [(i,) for i in ids])
        rowids = self._rowids(ids)
        cur.executemany(
            f"INSERT INTO {self._fts}(rowid, tokens) VALUES (?, ?)",
            [(rowids[i], " ".join(tokenize(latest[i]))) for i in ids],
        )
        return len(ids)

    def delete(self, ids: Iterable[str]) -> int:
        """Remove items by id (unknown ids are ignored); returns how many were removed."""
        removed = 0
        batch: list[str] = []
        for item_id in ids:
            batch.append(str(item_id))
            if len(batch) >= _BATCH:
                removed += self._delete_ids(batch)
                batch = []
        if batch:
            removed += self._delete_ids(batch)
        self._maybe_commit()
        return removed

    def _delete_ids(self, ids: Sequence[str]) -> int:
        rowids = list(self._rowids(ids).values())
        if not rowids:
            return 0
        cur = self._conn.cursor()
        cur.executemany(f"DELETE FROM {self._fts} WHERE rowid = ?", [(r,) for r in rowids])
        cur.executemany(f"DELETE FROM {self._map} WHERE rowid = ?", [(r,) for r in rowids])
        return len(rowids)

    def follow_deletes(self, table: str, id_column: str = "id") -> None:
        """Remove an item whenever the row of `table` whose `id_column` is its id is deleted,
        also by a foreign-key cascade or by code that knows nothing of this index, in the
        deleting transaction (a trigger): the index can never keep text its owner erased."""
        for name in (table, id_column):
            if not _TABLE_NAME.fullmatch(name):
                raise KeywordIndexError(f"invalid table or column name: {name!r}")
        self._conn.execute(
            f"CREATE TRIGGER IF NOT EXISTS {self._fts}_follow_{table} AFTER DELETE ON {table} "
            f"BEGIN DELETE FROM {self._fts} WHERE rowid IN "
            f"(SELECT rowid FROM {self._map} WHERE id = OLD.{id_column}); "
            f"DELETE FROM {self._map} WHERE id = OLD.{id_column}; END"
        )
        self._maybe_commit()

    def optimize(self) -> None:
        """Merge the FTS segments: deleted items' tokens linger in old segments until a merge,
        so a removal the user expects to be final optimizes before scrubbing the file."""
        try:
            self._conn.execute(f"INSERT INTO {self._fts}({self._fts}) VALUES ('optimize')")
        except sqlite3.DatabaseError as exc:
            raise KeywordIndexError(f"cannot optimize the keyword index ({exc})") from exc
        self._maybe_commit()

    def clear(self) -> None:
        """Remove everything (for a rebuild) and mark the index as current-tokenizer."""
        self._conn.execute(f"DELETE FROM {self._fts}")
        self._conn.execute(f"DELETE FROM {self._map}")
        self._conn.execute(
            f"INSERT OR REPLACE INTO {self._meta}(key, value) VALUES ('tokenizer', ?)",
            (str(TOKENIZER_VERSION),),
        )
        self._maybe_commit()

    # -- reads ------------------------------------------------------------------------------

    def _rowids(self, ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            marks = ",".join("?" * len(part))
            for rowid, item_id in self._conn.execute(
                f"SELECT rowid, id FROM {self._map} WHERE id IN ({marks})", part
            ):
                found[item_id] = rowid
        return found

    def count(self) -> int:
        """How many items are indexed; cached until the database changes, because every
        search plans with it and `count(*)` walks the whole id table (~1 ms per 30k items)."""
        # data_version moves when another connection commits; total_changes counts this
        # connection's own writes, trigger-made ones included (`follow_deletes`). Neither
        # moving means no row of this database changed since the count was taken. Inside an
        # open transaction nothing is cached: a rollback would undo rows but move neither.
        if self._conn.in_transaction:
            return self._count_rows()
        state = (int(self._conn.execute("PRAGMA data_version").fetchone()[0]),
                 self._conn.total_changes)
        if self._counted is None or self._counted[0] != state:
            self._counted = (state, self._count_rows())
        return self._counted[1]

    def _count_rows(self) -> int:
        return int(self._conn.execute(f"SELECT count(*) FROM {self._map}").fetchone()[0])

    def stored_tokens(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The tokens indexed for each of `ids` (as `tokenize` made them when the item was
        added; unknown ids are left out): reading them back costs a lookup by rowid, where
        tokenizing the text again costs a Snowball/jieba pass (most of a search's fuse time)."""
        found: dict[str, list[str]] = {}
        wanted = list(dict.fromkeys(ids))
        for start in range(0, len(wanted), _BATCH):
            part = wanted[start : start + _BATCH]
            marks = ",".join("?" * len(part))
            for item_id, tokens in self._conn.execute(
                f"SELECT m.id, f.tokens FROM {self._map} m JOIN {self._fts} f "
                f"ON f.rowid = m.rowid WHERE m.id IN ({marks})", part
            ):
                found[item_id] = tokens.split(" ") if tokens else []
        return found

    def ids(self) -> list[str]:
        """All indexed ids (for consistency checks against the manifest)."""
        return [row[0] for row in self._conn.execute(f"SELECT id FROM {self._map}")]

    def search(
        self, query: str, k: int, *, ids: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The best `k` items for `query` as `(id, score)`, best first.

        The score is FTS5's BM25 negated so that higher is better (k1=1.2, b=0.75). Any query
        token matching counts (an OR query); quotes and FTS5 operators in the query are plain
        text. `ids`, when given, restricts results to those ids (e.g. one folder's chunks).
        """
        tokens = query_tokens(query)
        if not tokens or k <= 0 or (ids is not None and not ids):
            return []
        try:
            return self._search(tokens, k, ids)
        except sqlite3.DatabaseError as exc:  # includes "disk image is malformed"
            raise KeywordIndexError(f"keyword search failed ({exc})") from exc

    def common_terms(self, tokens: Sequence[str], share: float) -> set[str]:
        """Those of `tokens` found in at least `share` of the items (none of an empty index)."""
        total = self.count()
        if not tokens or total == 0:
            return set()
        df = self._document_frequencies(list(dict.fromkeys(tokens)))
        return {t for t in tokens if df.get(t, 0) >= share * total}

    def document_frequencies(self, query: str) -> dict[str, int]:
        """How many items hold each of the query's tokens (tokens found nowhere left out)."""
        tokens = list(dict.fromkeys(query_tokens(query)))
        return {t: n for t, n in self._document_frequencies(tokens).items() if n > 0} \
            if tokens else {}

    def _document_frequencies(self, tokens: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(tokens), _BATCH):
            part = tokens[start : start + _BATCH]
            marks = ",".join("?" * len(part))
            found.update(
                self._conn.execute(
                    f"SELECT term, doc FROM {self._vocab} WHERE term IN ({marks})", part
                ).fetchall()
            )
        return found

    def _search(
        self, tokens: list[str], k: int, ids: Collection[str] | None
    ) -> list[tuple[str, float]]:
        df = self._document_frequencies(tokens)
        tokens = [t for t in tokens if df.get(t, 0) > 0]
        if not tokens:
            return []
        total = self.count()
        plan = plan_search(tokens, df, total)
        if plan is None:
            return []
        where = [f"{self._fts} MATCH ?"]
        params: list[object] = [plan.match]
        if plan.candidates is not None:
            # The unary + keeps SQLite from driving FTS5 by rowid (one lookup per candidate,
            # far slower); the candidate set is built once and probed per matching row.
            # Walking the posting lists is cheap (~2 ms for 17k rows at 32k items); BM25 and
            # the sort cost ~1-2 us a row, so only candidates are scored and sorted.
            where.append(
                f"+{self._fts}.rowid IN (SELECT rowid FROM {self._fts} WHERE {self._fts} MATCH ?)"
            )
            params.append(plan.candidates)
        if ids is not None:
            # The allow-list travels as one JSON parameter: no temp table and no limit on the
            # number of SQL variables, fast for thousands of ids.
            where.append(f"+{self._fts}.rowid IN (SELECT m.rowid FROM {self._map} AS m "
                         "WHERE m.id IN (SELECT value FROM json_each(?)))")
            params.append(json.dumps([str(i) for i in ids]))
        params.append(k)
        # The id map is joined for the `k` rows kept only, not for every scored row, and BM25
        # is computed once per row (`-bm25(...)` beside `ORDER BY bm25(...)` computed it twice).
        sql = (
            f"SELECT m.id, -s.score FROM (SELECT {self._fts}.rowid AS r, bm25({self._fts}) "
            f"AS score FROM {self._fts} WHERE {' AND '.join(where)} ORDER BY score LIMIT ?) "
            f"AS s JOIN {self._map} AS m ON m.rowid = s.r ORDER BY s.score"
        )
        rows = self._conn.execute(sql, params).fetchall()
        return [(item_id, float(score)) for item_id, score in rows]
