"""The HybridRetriever pipeline over an in-memory knowledge base (no model, no Chroma)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import pytest

from assistant.config import RetrievalConfig
from assistant.errors import UserError
from assistant.retrieval.hybrid import STAGES, HybridRetriever
from assistant.retrieval.llama import to_nodes
from assistant.retrieval.log import RetrievalLog
from assistant.retrieval.recency import SECONDS_PER_DAY
from tests.fakes import HashEmbedder
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk

NOW = 1_700_000_000.0
OLD = NOW - 365 * SECONDS_PER_DAY

DOCS = {
    "/notes/git/git-stash.md": "git-stash: save uncommitted changes in a stash and restore later",
    "/notes/git/git-rebase.md": "git rebase: reapply commits on top of another branch",
    "/notes/tools/tar.md": "tar: create and extract archive files, gzip compression",
    "/notes/tools/zip.md": "zip: package and compress files into a zip archive",
    "/notes/tickets/ABC-001.md": "ABC-001 login page crashes when password is empty",
    "/notes/zh/tar.md": "tar 归档实用程序 创建存档并将其写入文件 解压缩",
    "/notes/zh/ls.md": "ls 列出目录内容 显示隐藏文件",
}


def build_kb(mtimes: dict[str, float] | None = None) -> FakeKnowledgeBase:
    kb = FakeKnowledgeBase(HashEmbedder())
    for source, text in DOCS.items():
        lang = "zh" if "/zh/" in source else "en"
        kb.add(make_chunk(source, text, mtime=(mtimes or {}).get(source, OLD), language=lang,
                          heading=Path(source).stem))
    return kb


class Settings(TypedDict, total=False):
    """The RetrievalConfig fields these tests set."""

    per_file: int
    score_threshold: float
    keyword_threshold: float
    meaning_weight: float
    fusion: str
    recency_boost: float


def retriever(kb: FakeKnowledgeBase, **settings: Unpack[Settings]) -> HybridRetriever:
    config = RetrievalConfig(**settings)
    return HybridRetriever(kb, kb.embedder, config, clock=lambda: NOW)


def test_hits_carry_every_retrievers_evidence() -> None:
    r = retriever(build_kb())
    result = r.search("git-stash", top_k=3)
    top = result.hits[0]
    assert top.source == "/notes/git/git-stash.md"
    assert top.rank == 1 and [h.rank for h in result.hits] == [1, 2, 3]
    assert top.dense_rank == 1 and top.keyword_rank == 1
    assert top.cosine is not None and 0 < top.cosine <= 1
    assert top.bm25 is not None and top.bm25 > 0
    assert top.keyword == 1.0  # best BM25 and every query term present
    assert top.rrf == pytest.approx(1.0)  # normalised: first in both lists
    assert top.fused == pytest.approx(top.rrf)  # old file: no boost
    # First in both lists, but the file is old: no recency boost out of the possible 20 %.
    assert top.score == pytest.approx(1 / 1.2)
    assert all(0.0 <= h.score <= 1.0 for h in result.hits)
    assert [h.fused for h in result.hits] == sorted((h.fused for h in result.hits), reverse=True)
    assert set(result.timings) == set(STAGES)
    assert result.timings["total"] >= result.timings["keyword"]
    assert not result.low_confidence
    r.close()


def test_score_is_normalised_fused_not_raw_rrf() -> None:
    result = retriever(build_kb()).search("compress archive", top_k=5)
    for hit in result.hits:
        assert hit.score == pytest.approx(hit.fused / 1.2, abs=1e-6)
        assert 0.0 <= hit.score <= 1.0


def test_identifier_and_chinese_queries_find_their_files() -> None:
    r = retriever(build_kb())
    assert r.search("ABC-001", top_k=1).hits[0].source.endswith("ABC-001.md")
    assert r.search("如何解压缩存档", top_k=1).hits[0].source == "/notes/zh/tar.md"
    assert r.search("列出目录", top_k=1).hits[0].source == "/notes/zh/ls.md"


def test_recency_boost_lifts_a_recent_file_over_an_equal_old_one() -> None:
    mtimes = {"/notes/tools/zip.md": NOW - 1 * SECONDS_PER_DAY}
    boosted = retriever(build_kb(mtimes)).search("compress files archive", top_k=7)
    plain = retriever(build_kb(mtimes), recency_boost=0.0).search(
        "compress files archive", top_k=7
    )
    zip_boosted = next(h for h in boosted.hits if h.source.endswith("zip.md"))
    zip_plain = next(h for h in plain.hits if h.source.endswith("zip.md"))
    assert zip_boosted.recency_boost == pytest.approx(0.2 * 6 / 7)
    assert zip_boosted.fused == pytest.approx(zip_boosted.rrf * (1 + 0.2 * 6 / 7))
    assert zip_plain.recency_boost == 0.0 and zip_plain.fused == zip_plain.rrf
    assert zip_boosted.rank <= zip_plain.rank


def test_in_path_restricts_both_retrievers() -> None:
    kb = build_kb()
    r = retriever(kb)
    result = r.search("archive", top_k=10, in_path="/notes/zh")
    assert result.hits and all(h.source.startswith("/notes/zh/") for h in result.hits)
    assert kb.dense_calls[-1] == kb.keyword_calls[-1] == ["/notes/zh/ls.md", "/notes/zh/tar.md"]
    with pytest.raises(UserError, match="no indexed files"):
        r.search("archive", in_path="/nowhere")


class ReverseReranker:
    """Fake cross-encoder: prefers the zip page, recording what it saw."""

    name = "fake"

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        self.seen.append((query, len(texts)))
        return [0.9 if t.startswith("zip") else 0.1 for t in texts]


def test_reranker_reorders_the_head_and_sets_the_score() -> None:
    kb = build_kb()
    fake = ReverseReranker()
    r = HybridRetriever(kb, kb.embedder, RetrievalConfig(), reranker=fake, clock=lambda: NOW)
    result = r.search("tar archive", top_k=3)
    assert fake.seen and fake.seen[0][0] == "tar archive"
    assert result.hits[0].source.endswith("zip.md")
    assert result.hits[0].rerank_score == 0.9 and result.hits[0].score == 0.9
    assert result.timings["rerank"] >= 0


def test_gate_flags_off_topic_queries_and_passes_exact_identifiers() -> None:
    r = retriever(build_kb(), score_threshold=0.6)
    off_topic = r.search("sourdough bread baking temperature", top_k=3)
    assert off_topic.low_confidence
    assert off_topic.best_keyword is None or off_topic.best_keyword < 0.5
    exact = r.search("ABC-001", top_k=3)
    assert not exact.low_confidence and exact.best_keyword == 1.0


def test_empty_index_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="index is empty"):
        retriever(FakeKnowledgeBase()).search("anything")


def test_bad_queries_are_clear_errors() -> None:
    r = retriever(build_kb())
    with pytest.raises(UserError, match="empty"):
        r.search("   ")
    with pytest.raises(UserError, match="top-k"):
        r.search("tar", top_k=-1)


def test_parallel_and_sequential_give_the_same_ranking() -> None:
    kb = build_kb()
    parallel = HybridRetriever(kb, kb.embedder, clock=lambda: NOW, parallel=True)
    sequential = HybridRetriever(kb, kb.embedder, clock=lambda: NOW, parallel=False)
    for q in ("git stash", "压缩 文件", "ticket login crash"):
        a = [(h.chunk_id, h.fused) for h in parallel.search(q, top_k=5).hits]
        b = [(h.chunk_id, h.fused) for h in sequential.search(q, top_k=5).hits]
        assert a == b
    parallel.close()


def test_follow_up_uses_history() -> None:
    kb = build_kb()
    r = retriever(kb)
    result = r.search("and for zip?", history=["how do I compress files"], top_k=2)
    assert result.search_query == "how do I compress files and for zip?"
    assert result.query == "and for zip?"


def test_every_search_is_logged_without_chunk_text(tmp_path: Path) -> None:
    kb = build_kb()
    log = RetrievalLog(tmp_path / "log.sqlite3")
    r = HybridRetriever(kb, kb.embedder, log=log, origin="tui", clock=lambda: NOW)
    result = r.search("git-stash", top_k=2)
    assert result.log_id is not None
    entry = log.get(result.log_id)
    assert entry is not None and entry.origin == "tui" and entry.query == "git-stash"
    assert [h.chunk_id for h in entry.hits] == [h.chunk_id for h in result.hits]
    assert entry.timings["total"] == result.timings["total"]
    raw = (tmp_path / "log.sqlite3").read_bytes()
    assert b"uncommitted changes" not in raw  # sources and scores only
    r.search("tar", log=False)
    assert log.count() == 1
    log.close()


def test_llama_index_retrieve_returns_nodes_with_citation_metadata() -> None:
    kb = build_kb()
    r = retriever(kb)
    nodes = r.retrieve("git-stash")
    assert len(nodes) == RetrievalConfig().top_k
    first = nodes[0]
    assert first.node.node_id == r.search("git-stash").hits[0].chunk_id
    assert first.node.metadata["source"] == "/notes/git/git-stash.md"
    assert 0 <= (first.score or 0) <= 1
    assert "uncommitted" in first.node.get_content()
    assert to_nodes(r.search("tar", top_k=2))[0].node.metadata["rank"] == 1


def test_one_file_holds_at_most_per_file_hits_and_folds_the_rest() -> None:
    kb = build_kb()
    for n in range(5):
        kb.add(make_chunk("/notes/tools/tar-long.md", f"tar archive extract part {n} of the page",
                          index=n + 1, mtime=OLD))
    result = retriever(kb, per_file=2).search("tar archive extract", top_k=4)
    sources = [h.source for h in result.hits]
    assert sources.count("/notes/tools/tar-long.md") == 2 and len(sources) == 4
    best = next(h for h in result.hits if h.source == "/notes/tools/tar-long.md")
    assert best.more_from_file == 3
    assert sum(h.more_from_file for h in result.hits if h.source.endswith("tar-long.md")) == 3
    uncapped = retriever(kb, per_file=0).search("tar archive extract", top_k=4)
    assert all(h.more_from_file == 0 for h in uncapped.hits)


class _FixedLists(FakeKnowledgeBase):
    """Dense and keyword lists given outright, to pin down what the gate sees."""

    def __init__(self, dense: list[tuple[str, float]], keyword: list[tuple[str, float]]) -> None:
        super().__init__(HashEmbedder())
        self.fixed = (dense, keyword)

    def dense_search(self, query_embedding, k, *, sources=None):
        return self.fixed[0][:k]

    def keyword_search(self, query, k, *, sources=None):
        return self.fixed[1][:k]


def test_the_gate_vouches_only_with_evidence_it_shows() -> None:
    """A strong keyword match that the list does not show must not make it look confident."""
    weak = make_chunk("/notes/weak.md", "nothing much in common", mtime=OLD)
    strong = make_chunk("/notes/strong.md", "zebra crossing rules", mtime=OLD)
    # weak: first by meaning and second by keywords, so it fuses first; strong: keyword #1 only.
    kb = _FixedLists([(weak.id, 0.2)], [(strong.id, 9.0), (weak.id, 1.0)])
    kb.add(weak, strong)
    r = retriever(kb, score_threshold=0.5, keyword_threshold=0.5, per_file=0)
    both = r.search("zebra crossing rules", top_k=2)
    assert [h.source for h in both.hits] == ["/notes/weak.md", "/notes/strong.md"]
    assert not both.low_confidence and both.best_keyword == 1.0
    first = r.search("zebra crossing rules", top_k=1)
    assert [h.source for h in first.hits] == ["/notes/weak.md"]
    assert first.low_confidence
    assert first.best_keyword == 0.0 and first.best_cosine == pytest.approx(0.2)


@pytest.mark.parametrize(("text", "kept"), [("zebra crossing rules", True), ("zebra", False)])
def test_a_strong_keyword_top_stays_in_the_top_ten(text: str, kept: bool) -> None:
    """Fifteen chunks the dense list loves outscore a keyword #1 it never saw; the keyword #1
    still ranks 10th when it holds the query's terms (not when it only shares one word)."""
    others = [make_chunk(f"/notes/o{n}.md", f"other {n}", mtime=OLD) for n in range(15)]
    strong = make_chunk("/notes/strong.md", text, mtime=OLD)
    junk = make_chunk("/notes/junk.md", "junk", mtime=OLD)  # the low end of both lists
    dense = [(c.id, 0.95 - n / 1000) for n, c in enumerate(others)] + [(junk.id, 0.1)]
    keyword = [(strong.id, 9.0)] + [(c.id, 8.9 - n / 100) for n, c in enumerate(others)]
    keyword.append((junk.id, 0.5))
    kb = _FixedLists(dense, keyword)
    kb.add(strong, junk, *others)
    result = retriever(kb, per_file=0).search("zebra crossing rules", top_k=15)
    sources = [h.source for h in result.hits]
    if kept:
        assert sources.index("/notes/strong.md") == 9
    else:
        assert "/notes/strong.md" not in sources[:10]


def test_rrf_fusion_ranks_by_position_only() -> None:
    """Same lists, two fusions: a keyword #1 that towers over its list (9.0 against ~1) wins
    under the convex fusion of normalised scores; RRF sees only ranks, so the chunk second in
    both lists beats it. Both score on [0, 1], 1 = first in both lists."""
    chunks = {name: make_chunk(f"/notes/{name}.md", f"{name} zebra crossing", mtime=OLD)
              for name in ("first", "steady", "other", "towering", "junk")}
    order = ("first", "steady", "other", "towering", "junk")
    dense = [(chunks[n].id, s) for n, s in zip(order, (0.80, 0.79, 0.70, 0.60, 0.20),
                                                strict=True)]
    order = ("towering", "steady", "other", "first", "junk")
    keyword = [(chunks[n].id, s) for n, s in zip(order, (9.0, 1.1, 1.05, 1.0, 0.5), strict=True)]
    kb = _FixedLists(dense, keyword)
    kb.add(*chunks.values())
    convex = retriever(kb, per_file=0, meaning_weight=0.5).search("zebra crossing", top_k=5)
    assert convex.hits[0].source == "/notes/towering.md"
    by_rank = retriever(kb, per_file=0, fusion="rrf").search("zebra crossing", top_k=5)
    assert by_rank.hits[0].source == "/notes/steady.md"
    assert by_rank.hits[0].rrf == pytest.approx((1 / 62 + 1 / 62) / (2 / 61))
    assert all(0.0 < h.rrf <= 1.0 for h in by_rank.hits)


class _StoredTerms(FakeKnowledgeBase):
    """A knowledge base that reads keyword tokens back, as indexing.knowledge does."""

    def chunk_terms(self, ids: Sequence[str]) -> dict[str, list[str]]:
        return {i: list(self._tokens[i]) for i in ids if i in self._tokens}


def test_keyword_scores_use_the_stored_tokens_without_retokenizing() -> None:
    from indexing.tokenize import tokenize

    seen: list[str] = []

    def tokenizer(text: str) -> list[str]:
        seen.append(text)
        return tokenize(text)

    plain, stored = build_kb(), _StoredTerms(HashEmbedder())
    stored.chunks, stored._vectors, stored._tokens = plain.chunks, plain._vectors, plain._tokens
    expected = retriever(plain).search("compress archive files", top_k=5)
    r = HybridRetriever(stored, stored.embedder, RetrievalConfig(), clock=lambda: NOW,
                        tokenizer=tokenizer)
    got = r.search("compress archive files", top_k=5)
    assert [(h.chunk_id, h.keyword) for h in got.hits] == [
        (h.chunk_id, h.keyword) for h in expected.hits
    ]
    assert any(h.keyword for h in got.hits)
    assert seen and all(text == "compress archive files" for text in seen)


class _CountingKB(FakeKnowledgeBase):
    """Records which chunks' full rows (with text) a search reads; `vanish` are deleted after
    ranking (a sync running beside the search)."""

    def __init__(self) -> None:
        super().__init__(HashEmbedder())
        self.texts_read: list[str] = []
        self.vanish: set[str] = set()

    def get_chunks(self, ids):
        self.texts_read += list(ids)
        return {i: c for i, c in super().get_chunks(ids).items() if i not in self.vanish}


def _many_files_kb() -> _CountingKB:
    kb = _CountingKB()
    for n in range(60):
        kb.add(make_chunk(f"/notes/n{n:02}.md", f"archive tar note {n} words w{n}", mtime=OLD))
    return kb


def test_a_search_reads_the_text_of_only_the_chunks_it_shows() -> None:
    """Ranking needs each candidate's file and mtime, not its text: the text of the few shown
    is read, not that of every candidate (issue 25: ~400 rows per query at 32k chunks)."""
    kb = _many_files_kb()
    result = retriever(kb).search("archive tar", top_k=5)
    assert len(result.hits) == 5
    assert sorted(kb.texts_read) == sorted(h.chunk.id for h in result.hits)


def test_a_chunk_deleted_after_ranking_leaves_its_slot_to_the_next() -> None:
    kb = _many_files_kb()
    before = retriever(kb).search("archive tar", top_k=5)
    kb.vanish = {before.hits[1].chunk.id}
    after = retriever(kb).search("archive tar", top_k=5)
    assert len(after.hits) == 5
    assert [h.chunk.id for h in after.hits[:4]] == [
        h.chunk.id for h in before.hits if h.chunk.id not in kb.vanish][:4]
    assert before.hits[1].chunk.id not in {h.chunk.id for h in after.hits}
