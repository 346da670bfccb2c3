"""The persistent BM25 keyword index (SQLite FTS5 over `indexing.tokenize` tokens)."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexing import keyword_plan
from indexing.keywords import KeywordIndex, KeywordIndexError

DOCS = {
    "tar": "tar: archive utility. Extract a tar.gz archive into a directory: tar xzf file.tar.gz",
    "stash": "git-stash: stash local changes in a dirty working directory. git stash push",
    "commit": "git-commit: record changes to the repository. git commit -m message",
    "ls": "ls: list directory contents. List files one per line, including hidden files",
    "zh-rm": "rm 删除文件或目录。递归删除一个目录及其所有内容",
    "zh-ls": "ls 列出目录内容。列出所有文件，包括隐藏文件",
    "ticket": "Fixed ABC-001 in config.toml by renaming snake_case_option to camelCaseOption",
}


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(tmp_path / "kw.db")
    yield connection
    connection.close()


@pytest.fixture
def index(conn: sqlite3.Connection) -> KeywordIndex:
    kw = KeywordIndex(conn)
    kw.add(DOCS.items())
    conn.commit()
    return kw


def top(kw: KeywordIndex, query: str, k: int = 3, *,
        ids: Collection[str] | None = None) -> list[str]:
    return [item_id for item_id, _ in kw.search(query, k, ids=ids)]


def test_count_and_ids(index: KeywordIndex) -> None:
    assert index.count() == len(DOCS)
    assert sorted(index.ids()) == sorted(DOCS)


def test_ranking_prefers_the_matching_document(index: KeywordIndex) -> None:
    assert top(index, "how do I extract an archive", 1) == ["tar"]
    assert top(index, "record my changes in the repository", 1) == ["commit"]


def test_scores_are_positive_and_sorted(index: KeywordIndex) -> None:
    hits = index.search("list directory files", 10)
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)
    assert hits[0][0] == "ls"


def test_hyphenated_command_query(index: KeywordIndex) -> None:
    assert top(index, "git-stash", 1) == ["stash"]
    # Its parts find it too, so a user typing "stash" is not lost.
    assert top(index, "stash", 1) == ["stash"]


def test_identifiers_and_file_names(index: KeywordIndex) -> None:
    for query in ("ABC-001", "abc-001", "config.toml", "snake_case_option", "camelCaseOption"):
        assert top(index, query, 1) == ["ticket"], query


def test_stemming_matches_inflections(index: KeywordIndex) -> None:
    assert top(index, "extracting archives", 1) == ["tar"]


def test_chinese_query_matches_chinese_text(index: KeywordIndex) -> None:
    assert top(index, "怎么删除目录", 1) == ["zh-rm"]
    assert top(index, "列出隐藏的文件", 1) == ["zh-ls"]


def test_no_match_and_empty_queries(index: KeywordIndex) -> None:
    assert index.search("xylophone", 5) == []
    assert index.search("", 5) == []
    assert index.search("the of and", 5) == []
    assert index.search("archive", 0) == []


@pytest.mark.parametrize(
    "query",
    [
        'tar" OR "x',
        '"',
        "NEAR(tar archive)",
        "tar AND OR NOT",
        "*",
        "tar*",
        "^tar",
        "tokens:tar",
        "{tokens}: tar",
        "-tar +archive",
        "(((",
        "tar'; DROP TABLE chunk_fts; --",
        "\x00tar\x00",
    ],
)
def test_fts_syntax_in_queries_is_plain_text(index: KeywordIndex, query: str) -> None:
    results = index.search(query, 5)
    assert isinstance(results, list)
    if "tar" in query.lower():
        assert results and results[0][0] == "tar"
    assert index.count() == len(DOCS)


def test_stored_tokens_are_the_indexed_analysis(index: KeywordIndex) -> None:
    from indexing.tokenize import tokenize

    stored = index.stored_tokens(["ticket", "zh-rm", "unknown", "ticket"])
    assert stored == {"ticket": tokenize(DOCS["ticket"]), "zh-rm": tokenize(DOCS["zh-rm"])}
    index.add([("ticket", "renamed the option")])
    assert index.stored_tokens(["ticket"]) == {"ticket": tokenize("renamed the option")}
    assert index.stored_tokens([]) == {}


def test_update_replaces_text(index: KeywordIndex, conn: sqlite3.Connection) -> None:
    index.add([("tar", "completely different words about zebras")])
    conn.commit()
    assert index.count() == len(DOCS)
    assert "tar" not in top(index, "archive", 5)
    assert top(index, "zebra", 1) == ["tar"]


def test_duplicate_ids_in_one_batch_last_wins(conn: sqlite3.Connection) -> None:
    kw = KeywordIndex(conn)
    kw.add([("a", "apples"), ("a", "bananas")])
    assert kw.count() == 1
    assert top(kw, "banana") == ["a"]
    assert top(kw, "apple") == []


def test_delete(index: KeywordIndex, conn: sqlite3.Connection) -> None:
    assert index.delete(["stash", "missing-id"]) == 1
    conn.commit()
    assert index.count() == len(DOCS) - 1
    assert "stash" not in top(index, "git stash", 5)
    assert index.delete([]) == 0


def test_incremental_add_keeps_existing(index: KeywordIndex) -> None:
    index.add([("new", "rsync: synchronise files over ssh")])
    assert index.count() == len(DOCS) + 1
    assert top(index, "rsync", 1) == ["new"]
    assert top(index, "extract archive", 1) == ["tar"]


def test_persists_across_reconnect(tmp_path: Path) -> None:
    db = tmp_path / "persist.db"
    first = sqlite3.connect(db)
    KeywordIndex(first).add(DOCS.items())
    first.commit()
    first.close()

    second = sqlite3.connect(db)
    kw = KeywordIndex(second)
    assert kw.count() == len(DOCS)
    assert top(kw, "git-stash", 1) == ["stash"]
    assert not kw.stale
    second.close()


def test_writes_stay_in_the_callers_transaction(conn: sqlite3.Connection) -> None:
    kw = KeywordIndex(conn)
    conn.commit()
    kw.add([("a", "apples and pears")])
    assert kw.count() == 1
    conn.rollback()
    assert kw.count() == 0
    assert kw.search("apple", 5) == []


def _in_transaction(conn: sqlite3.Connection) -> bool:
    """Read afresh: after `assert not conn.in_transaction` mypy keeps the attribute False."""
    return conn.in_transaction


def test_opening_leaves_no_transaction_open(conn: sqlite3.Connection) -> None:
    KeywordIndex(conn)
    assert not conn.in_transaction
    KeywordIndex(conn)  # existing index: nothing written
    assert not conn.in_transaction
    conn.execute("BEGIN IMMEDIATE")
    KeywordIndex(conn, "other_fts")
    assert _in_transaction(conn)  # the caller's transaction is left to the caller
    conn.rollback()


def test_autocommit_flag_commits(tmp_path: Path) -> None:
    db = tmp_path / "auto.db"
    conn = sqlite3.connect(db)
    KeywordIndex(conn, autocommit=True).add([("a", "apples")])
    other = sqlite3.connect(db)
    assert KeywordIndex(other).count() == 1
    conn.close()
    other.close()


def test_ids_filter(index: KeywordIndex) -> None:
    assert top(index, "directory", 10, ids={"ls", "zh-rm"}) == ["ls"]
    assert top(index, "git changes", 10, ids=["commit"]) == ["commit"]
    assert index.search("git", 10, ids=set()) == []
    assert index.search("git", 10, ids={"nope"}) == []


def test_ids_filter_with_thousands_of_ids(conn: sqlite3.Connection) -> None:
    kw = KeywordIndex(conn)
    kw.add(
        (f"doc{i}", f"common words filler {'needle' if i % 100 == 0 else 'hay'}")
        for i in range(5000)
    )
    allowed = {f"doc{i}" for i in range(0, 5000, 2)} | {"not-indexed"}
    hits = top(kw, "needle", 100, ids=allowed)
    assert sorted(hits) == sorted(f"doc{i}" for i in range(0, 5000, 100))
    assert all(h in allowed for h in top(kw, "filler hay", 3000, ids=allowed))


def test_k_limits_results(index: KeywordIndex) -> None:
    assert len(index.search("directory files git changes", 2)) == 2


def test_common_terms_still_rank_documents_with_only_common_terms(
    conn: sqlite3.Connection,
) -> None:
    # "file" is in every item; "rsync" in one. Items with only "file" must still be findable
    # when the query has nothing rarer, and rank by BM25 when it does.
    kw = KeywordIndex(conn)
    kw.add((f"d{i}", "file " * (1 + i % 3) + f"filler{i}") for i in range(200))
    kw.add([("r", "rsync file transfer")])
    assert len(kw.search("file", 500)) == 201
    assert top(kw, "rsync file", 1) == ["r"]


def _rare_and_common(conn: sqlite3.Connection) -> KeywordIndex:
    kw = KeywordIndex(conn)
    kw.add((f"d{i}", f"filler{i} {'alpha' if i % 10 == 0 else 'beta'}") for i in range(100))
    kw.add([("z", "zeta alpha")])
    return kw


def test_small_index_ranks_every_match(conn: sqlite3.Connection) -> None:
    kw = _rare_and_common(conn)
    hits = top(kw, "zeta alpha", 50)
    assert hits[0] == "z"
    assert len(hits) == 11  # "z" plus the ten items that only say "alpha"


def test_large_index_ranks_only_items_with_a_rare_term(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword_plan, "PRUNE_MIN_ITEMS", 50)
    kw = _rare_and_common(conn)
    exact = kw.search("zeta", 5)
    assert [i for i, _ in kw.search("zeta alpha", 50)] == ["z"]
    # The score is still BM25 over all query terms, higher than for "zeta" alone.
    assert kw.search("zeta alpha", 1)[0][1] > exact[0][1]
    # A query of only common terms still finds the items that have them.
    assert len(kw.search("alpha", 50)) == 11


def _common_only(conn: sqlite3.Connection) -> KeywordIndex:
    # "note" and "meeting" are in 60% of the items each (together in all), "config" in 20%,
    # "release" in 10%: no term is rarer than 5%.
    kw = KeywordIndex(conn)
    kw.add((f"d{i}", " ".join([f"filler{i}"]
                              + ["note"] * (i % 5 < 3) + ["meeting"] * (i % 5 > 1)
                              + ["config"] * (i % 5 == 0) + ["release"] * (i % 10 == 0)))
           for i in range(100))
    return kw


def test_large_index_gives_no_hits_when_every_term_is_in_half_the_items(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    kw = _common_only(conn)
    assert len(kw.search("note meeting", 200)) == 100  # small index: every match ranked
    monkeypatch.setattr(keyword_plan, "PRUNE_MIN_ITEMS", 50)
    assert kw.search("note meeting", 200) == []
    # A useful term beside them still ranks, scored by every term it has.
    assert len(kw.search("note release", 200)) == 10


def test_large_index_without_rare_terms_ranks_items_holding_every_useful_term(
    conn: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    kw = _common_only(conn)
    assert len(kw.search("config release", 200)) == 20  # small index: any of the two
    monkeypatch.setattr(keyword_plan, "PRUNE_MIN_ITEMS", 50)
    both = kw.search("config release", 200)
    assert sorted(i for i, _ in both) == sorted(f"d{i}" for i in range(0, 100, 10))
    # Same BM25 as the OR query gives those items: scored by both terms.
    monkeypatch.setattr(keyword_plan, "PRUNE_MIN_ITEMS", 10_000)
    either = dict(kw.search("config release", 200))
    assert all(abs(score - either[i]) < 1e-9 for i, score in both)


def _count_statements(conn: sqlite3.Connection) -> list[str]:
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    return seen


def test_count_is_cached_until_the_database_changes(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "kw.db")
    kw = KeywordIndex(conn, autocommit=True)
    kw.add([("a", "alpha"), ("b", "beta")])
    assert kw.count() == 2
    seen = _count_statements(conn)
    for _ in range(3):
        kw.search("alpha", 5)
        assert kw.count() == 2
    assert not [s for s in seen if "count(*)" in s]
    conn.set_trace_callback(None)
    kw.add([("c", "gamma")])  # this connection's own write
    assert kw.count() == 3
    conn.execute("BEGIN")
    conn.execute("INSERT INTO chunk_fts_ids(id) VALUES ('d')")  # as `add` does, uncommitted
    assert kw.count() == 4
    conn.rollback()  # moves neither data_version nor total_changes back
    assert kw.count() == 3
    other = sqlite3.connect(tmp_path / "kw.db")
    KeywordIndex(other, autocommit=True).delete(["a"])  # another connection's commit
    assert kw.count() == 2
    other.close()
    conn.execute("CREATE TABLE owner (id TEXT)")
    conn.execute("INSERT INTO owner VALUES ('b')")
    kw.follow_deletes("owner")
    assert kw.count() == 2
    conn.execute("DELETE FROM owner")  # removed by the trigger, not by the index
    assert kw.count() == 1
    conn.close()


def test_clear(index: KeywordIndex) -> None:
    index.clear()
    assert index.count() == 0
    assert index.search("tar", 5) == []
    index.add([("x", "tar archive")])
    assert top(index, "tar") == ["x"]


def test_separate_tables_do_not_mix(conn: sqlite3.Connection) -> None:
    chunks = KeywordIndex(conn, "chunk_fts")
    memories = KeywordIndex(conn, "memory_fts")
    chunks.add([("c1", "python packaging")])
    memories.add([("m1", "prefers python")])
    assert top(chunks, "python") == ["c1"]
    assert top(memories, "python") == ["m1"]


@pytest.mark.parametrize("name", ["", "1abc", "bad name", "x;drop", "a-b"])
def test_invalid_table_name(conn: sqlite3.Connection, name: str) -> None:
    with pytest.raises(KeywordIndexError):
        KeywordIndex(conn, name)


def test_stale_after_tokenizer_version_change(conn: sqlite3.Connection) -> None:
    kw = KeywordIndex(conn)
    conn.execute("UPDATE chunk_fts_meta SET value = '0' WHERE key = 'tokenizer'")
    assert kw.stale
    kw.clear()
    assert not kw.stale


def test_corrupt_database_gives_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "corrupt.db"
    db.write_bytes(b"this is not a database" * 100)
    conn = sqlite3.connect(db)
    with pytest.raises(KeywordIndexError, match="cannot open the keyword index"):
        KeywordIndex(conn)
    conn.close()


def test_damaged_fts_data_gives_a_clear_search_error(index: KeywordIndex) -> None:
    index._conn.execute("UPDATE chunk_fts_data SET block = x'deadbeefdeadbeef' WHERE id > 1")
    with pytest.raises(KeywordIndexError, match="keyword search failed"):
        index.search("archive directory files", 5)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_queries_never_raise(query: str) -> None:
    conn = sqlite3.connect(":memory:")
    kw = KeywordIndex(conn)
    kw.add(DOCS.items())
    results = kw.search(query, 5)
    assert all(item_id in DOCS for item_id, _ in results)
    conn.close()


def test_common_terms_are_those_in_a_share_of_the_items(index: KeywordIndex,
                                                        conn: sqlite3.Connection) -> None:
    # "git" is in 2 of 7 items, "directori" (directory, directory contents) in 3, "tar" in 1
    assert index.common_terms(["git", "directori", "tar", "absent"], 3 / 7) == {"directori"}
    assert index.common_terms(["git", "directori", "tar"], 2 / 7) == {"git", "directori"}
    assert index.common_terms([], 0.1) == set()
    assert KeywordIndex(conn, "empty").common_terms(["git"], 0.0) == set()


def test_two_connections_opening_a_new_index_at_once_both_succeed(tmp_path: Path) -> None:
    """Both saw no tokenizer row, then both recorded it: the second hit the UNIQUE key."""
    import sqlite3 as sq

    path = tmp_path / "k.sqlite3"
    first, second = sq.connect(path), sq.connect(path)
    for conn in (first, second):
        conn.execute("CREATE TABLE IF NOT EXISTS chunk_fts_meta (key TEXT PRIMARY KEY, value TEXT)")
    # The second connection records it between the first's SELECT and INSERT.
    real_execute = first.execute

    class Racing:
        def __init__(self, conn: sq.Connection) -> None:
            self._conn = conn

        def __getattr__(self, name: str) -> object:
            return getattr(self._conn, name)

        def execute(self, sql: str, *args: Any) -> sq.Cursor:
            if sql.lstrip().upper().startswith("INSERT") and "_meta" in sql:
                KeywordIndex(second, autocommit=True)
            return real_execute(sql, *args)

    KeywordIndex(Racing(first), autocommit=True)  # type: ignore[arg-type]  # a racing stand-in
    assert first.execute("SELECT count(*) FROM chunk_fts_meta").fetchone() == (1,)
