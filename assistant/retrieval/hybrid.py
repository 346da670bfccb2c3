"""HybridRetriever: dense + BM25 → fusion (convex; RRF on request) → recency → optional
rerank → confidence gate.

`search()` returns the full evidence (`RetrievalResult`). A plain class, so a search never
imports LlamaIndex (1-3 s); `as_llama_retriever()` / `retrieve()` give the LlamaIndex
`BaseRetriever` face (llama.py) to pipelines that want nodes.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from assistant.config import RetrievalConfig
from assistant.daemon_pool import DaemonThreadPool
from assistant.errors import UserError
from assistant.retrieval.coverage import vector_gap_warning
from assistant.retrieval.diversify import cap_per_file
from assistant.retrieval.filters import allowed_sources, modified_sources
from assistant.retrieval.fusion import RRF_K, Fused, convex, keep_within, max_rrf, rrf
from assistant.retrieval.gate import GateThresholds, is_low_confidence
from assistant.retrieval.hit import RetrievalResult, SearchHit
from assistant.retrieval.query import build_search_query
from assistant.retrieval.recency import recency_boost
from assistant.retrieval.rerank import Reranker
from assistant.retrieval.scores import fused_display, keyword_score, term_coverage
from assistant.retrieval.weights import dense_trusted, dense_weight
from assistant.timerange import TimeRange
from indexing.errors import log_failure
from indexing.llama_import import load_llama_index
from indexing.timing import timed
from indexing.tokenize import tokenize
from indexing.types import Chunk, ChunkPlace
from indexing.vector_errors import EmbeddingModelMismatch, VectorStoreError

if TYPE_CHECKING:
    from llama_index.core.schema import NodeWithScore

    from assistant.retrieval.llama import LlamaRetriever

logger = logging.getLogger(__name__)

STAGES: tuple[str, ...] = ("embed", "dense", "keyword", "fuse", "rerank", "total")
KEEP_KEYWORD_TOP = 10  # a strong keyword #1 never ranks below this (issue 17)


class KnowledgeSearch(Protocol):
    """The part of `indexing.knowledge.KnowledgeBase` retrieval uses."""

    def dense_search(
        self, query_embedding: np.ndarray, k: int, *, sources: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def keyword_search(
        self, query: str, k: int, *, sources: Sequence[str] | None = None
    ) -> list[tuple[str, float]]: ...

    def get_chunks(self, ids: Sequence[str]) -> dict[str, Chunk]: ...

    def chunk_places(self, ids: Sequence[str]) -> dict[str, ChunkPlace]: ...

    def sources_under(self, path_or_glob: str) -> list[str]: ...

    def sources_modified(self, since: float | None, until: float | None) -> list[str]: ...

    def stats(self) -> tuple[int, int]: ...


class QueryEmbedder(Protocol):
    @property
    def model_id(self) -> str: ...

    def embed_query(self, text: str) -> np.ndarray: ...


class ResultLog(Protocol):
    def append(self, result: RetrievalResult, *, origin: str = ..., in_path: str | None = ...,
               when: float | None = ...) -> int: ...


@dataclass(frozen=True, slots=True)
class _Candidate:
    id: str
    place: ChunkPlace
    rrf: float
    boost: float
    fused: float
    cosine: float | None
    dense_rank: int | None
    bm25: float | None
    keyword_rank: int | None


def _default_tokenizer(text: str) -> list[str]:
    return tokenize(text)


class HybridRetriever:
    def __init__(
        self,
        kb: KnowledgeSearch,
        embedder: QueryEmbedder,
        settings: RetrievalConfig | None = None,
        *,
        reranker: Reranker | None = None,
        log: ResultLog | None = None,
        origin: str = "cli",
        tokenizer: Callable[[str], list[str]] | None = None,
        clock: Callable[[], float] = time.time,
        parallel: bool = True,
        cwd: Path | None = None,
    ) -> None:
        self.kb = kb
        self.embedder = embedder
        self.settings = settings or RetrievalConfig()
        self.reranker = reranker
        self.log = log
        self.origin = origin
        self._tokenize = tokenizer or _default_tokenizer
        self._clock = clock
        self._cwd = cwd
        # A daemon thread: an embedding stuck on a silent Ollama must not hold the process at
        # exit (ThreadPoolExecutor's threads are joined by the interpreter as it ends).
        self._pool: DaemonThreadPool | None = (
            DaemonThreadPool(1, thread_name_prefix="dense") if parallel else None
        )

    @property
    def gate_thresholds(self) -> GateThresholds:
        s = self.settings
        return GateThresholds(s.score_threshold, s.keyword_threshold, s.keyword_alone_threshold)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    # --- LlamaIndex interface ---------------------------------------------------------------

    def as_llama_retriever(self) -> LlamaRetriever:
        """This retriever as a LlamaIndex `BaseRetriever` (imports llama_index)."""
        load_llama_index()
        from assistant.retrieval.llama import LlamaRetriever

        return LlamaRetriever(self)

    def retrieve(self, query: str) -> list[NodeWithScore]:
        """LlamaIndex's `retrieve`: the hits as nodes with citation metadata."""
        return self.as_llama_retriever().retrieve(query)

    # --- the pipeline -----------------------------------------------------------------------

    def search_query_for(self, query: str, history: Sequence[str] = ()) -> str:
        return build_search_query(query, history)

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        in_path: str | None = None,
        history: Sequence[str] = (),
        candidates: int | None = None,
        log: bool = True,
        modified: TimeRange | None = None,
        typed: str | None = None,
    ) -> RetrievalResult:
        """Retrieve the best `top_k` chunks for `query` (with `history` = earlier user turns).

        `modified` keeps files last modified in that range (`brain search --since/--until`).
        `typed`: what the user typed when `query` was derived from it (a time phrase taken
        out): the result and the retrieval log keep it as the query.
        Raises UserError for an empty query, an empty index or a filter matching nothing.
        """
        return self._search(query, top_k, in_path, history, candidates, log, modified, typed)

    def _search(
        self,
        query: str,
        top_k: int | None,
        in_path: str | None,
        history: Sequence[str],
        candidates: int | None,
        log: bool,
        modified: TimeRange | None = None,
        typed: str | None = None,
    ) -> RetrievalResult:
        if not query or not query.strip():
            raise UserError("the query is empty")
        top_k = top_k or self.settings.top_k
        if top_k < 1:
            raise UserError(f"--top-k must be at least 1, got {top_k}")
        pool_size = max(candidates or self.settings.candidates, top_k)
        timings: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        with timed(timings, "total"):
            search_query = self.search_query_for(query.strip(), history)
            sources = allowed_sources(self.kb, in_path, self._cwd) if in_path else None
            if modified is not None:
                sources = modified_sources(self.kb, modified, sources)

            unusable: list[str] = []  # the vector store could not be searched: keywords only
            dense, keyword = self._run_retrievers(search_query, pool_size, sources, timings,
                                                  unusable)
            if not dense and not keyword:
                _files, chunks = self.kb.stats()
                if chunks == 0:
                    raise UserError(
                        "the index is empty: there is nothing to search yet",
                        hint="index a folder first: `brain index PATH`",
                    )

            with timed(timings, "fuse"):
                trust = dense_weight(search_query, self.embedder.model_id)
                ranked = self._fuse(dense, keyword, trust, search_query)

            with timed(timings, "rerank"):
                # The full chunks read so far: only those shown or reranked.
                texts: dict[str, Chunk] = {}
                ranked, rerank_scores = self._rerank(search_query, ranked, top_k, texts)

            with timed(timings, "fuse"):  # choosing what is shown counts as fusing
                chosen = self._shown(ranked, top_k, texts)
                hits = self._hits(search_query, chosen, keyword, rerank_scores)
                # The gate vouches only with evidence from what is shown: a strong match the list
                # does not hold must not make a list of weak ones look confident. An English-only
                # model's cosine on a Chinese query says nothing: it must not vouch either.
                best_cosine = _best(h.cosine for h in hits) if dense_trusted(trust) else None
                best_keyword = _best(h.keyword for h in hits)
                low = not hits or is_low_confidence(best_cosine, best_keyword, self.gate_thresholds)
        result = RetrievalResult(
            query=(typed or query).strip(),
            hits=hits,
            low_confidence=low,
            timings={k: round(v, 3) for k, v in timings.items()},
            search_query=search_query,
            best_cosine=best_cosine,
            best_keyword=best_keyword,
            warnings=tuple(unusable) or self._warnings(),
        )
        if log and self.log is not None:
            entry_id = self.log.append(result, origin=self.origin, in_path=in_path)
            result = _with_log_id(result, entry_id)
        return result

    def _rerank(
        self, search_query: str, ranked: list[_Candidate], top_k: int, texts: dict[str, Chunk]
    ) -> tuple[list[_Candidate], dict[str, float]]:
        """The head of `ranked` reordered by the reranker (if any), with its scores; the chunks
        read for it land in `texts` so the shown ones are not read twice."""
        if self.reranker is None or not ranked:
            return ranked, {}
        texts.update(self.kb.get_chunks([c.id for c in ranked[: max(top_k * 3, 20)]]))
        head = [c for c in ranked[: max(top_k * 3, 20)] if c.id in texts]
        scores = self.reranker.rerank(search_query, [texts[c.id].text for c in head])
        rerank_scores = {c.id: s for c, s in zip(head, scores, strict=True)}
        head = sorted(head, key=lambda c: -rerank_scores[c.id])  # stable on ties
        return head + [c for c in ranked if c.id not in rerank_scores], rerank_scores

    def _hits(
        self,
        search_query: str,
        chosen: list[tuple[_Candidate, Chunk, int]],
        keyword: list[tuple[str, float]],
        rerank_scores: dict[str, float],
    ) -> list[SearchHit]:
        query_terms = self._tokenize(search_query)
        best_raw = keyword[0][1] if keyword else 0.0
        terms = self._chunk_terms([chunk for c, chunk, _ in chosen if c.bm25 is not None])

        def cover(chunk: Chunk) -> float:
            return term_coverage(query_terms, terms[chunk.id])
        # The best possible fused score: first in both lists, from a file modified just now.
        best_possible = 1.0 + max(0.0, self.settings.recency_boost)
        return [
            SearchHit(
                chunk=chunk,
                rank=position,
                score=(
                    round(rerank_scores[c.id], 6)
                    if c.id in rerank_scores
                    else fused_display(c.fused, best_possible)
                ),
                fused=c.fused,
                rrf=c.rrf,
                cosine=c.cosine,
                dense_rank=c.dense_rank,
                bm25=c.bm25,
                keyword=(keyword_score(c.bm25, best_raw, cover(chunk))
                         if c.bm25 is not None else None),
                keyword_rank=c.keyword_rank,
                recency_boost=c.boost,
                rerank_score=rerank_scores.get(c.id),
                more_from_file=more,
            )
            for position, (c, chunk, more) in enumerate(chosen, start=1)
        ]

    def _shown(
        self, ranked: list[_Candidate], top_k: int, texts: dict[str, Chunk]
    ) -> list[tuple[_Candidate, Chunk, int]]:
        """The top `top_k` under the per-file cap, with their full chunks (read only now, for
        the few shown: `texts` holds those already read). A chunk deleted since ranking (a
        sync is running) leaves its slot to the next candidate."""
        while True:
            chosen = cap_per_file(ranked, top_k, self.settings.per_file, _source_of)
            missing = [c.id for c, _ in chosen if c.id not in texts]
            if missing:
                texts.update(self.kb.get_chunks(missing))
            gone = {c.id for c, _ in chosen if c.id not in texts}
            if not gone:
                return [(c, texts[c.id], more) for c, more in chosen]
            ranked = [c for c in ranked if c.id not in gone]

    def _chunk_terms(self, chunks: Sequence[Chunk]) -> dict[str, list[str]]:
        """Each chunk's keyword tokens: as the keyword index stored them when the knowledge
        base can read them back (optional on the protocol), else tokenized here. The same
        tokens either way (the index stores `indexing.tokenize` of the chunk text); reading
        them saves re-running Snowball and jieba over every shown chunk on each search."""
        stored: dict[str, list[str]] = {}
        read = getattr(self.kb, "chunk_terms", None)
        if read is not None and chunks:
            try:
                stored = read([c.id for c in chunks])
            # A SELECT on the manifest: a damaged keyword index (sqlite3.DatabaseError) fails
            # keyword search loudly already.
            except sqlite3.Error:
                logger.debug("could not read stored chunk tokens", exc_info=True)
        return {c.id: stored[c.id] if c.id in stored else self._tokenize(c.text) for c in chunks}

    def _warnings(self) -> tuple[str, ...]:
        # Optional on the protocol: stand-in knowledge bases may not count vectors.
        coverage = getattr(self.kb, "vector_coverage", None)
        if coverage is None:
            return ()
        try:
            counts = coverage()
        except Exception as exc:  # an unreadable store fails dense search loudly on its own
            log_failure(logger, "could not count vectors", exc, level=logging.DEBUG,
                        foreseen=(sqlite3.Error, OSError))
            return ()
        if counts is None:
            return ()
        warning = vector_gap_warning(*counts)
        return (warning,) if warning else ()

    def _run_retrievers(
        self,
        query: str,
        k: int,
        sources: Sequence[str] | None,
        timings: dict[str, float],
        unusable: list[str],
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """Dense (embed + vector search) in a worker thread while BM25 runs here: the model
        and Chroma release the GIL, so the keyword search is nearly free. A vector store that
        cannot be searched (damaged, server down) leaves keywords alone, said in `unusable`.
        """
        def dense() -> list[tuple[str, float]]:
            with timed(timings, "embed"):
                vector = self.embedder.embed_query(query)
            with timed(timings, "dense"):
                try:
                    found = self.kb.dense_search(vector, k, sources=sources)
                except EmbeddingModelMismatch:
                    raise
                except VectorStoreError as exc:
                    logger.info("vector search failed: %s", exc)
                    unusable.append(f"{exc.message} Searching by keywords only; to repair: "
                                    f"{exc.hint}" if exc.hint else
                                    f"{exc.message} Searching by keywords only.")
                    found = []
            return found

        future: Future[list[tuple[str, float]]] | None = None
        if self._pool is not None:
            future = self._pool.submit(dense)
        with timed(timings, "keyword"):
            keyword = self.kb.keyword_search(query, k, sources=sources)
        dense_hits = future.result() if future is not None else dense()
        return list(dense_hits), list(keyword)

    def _fuse(
        self,
        dense: list[tuple[str, float]],
        keyword: list[tuple[str, float]],
        trust: float,
        query: str,
    ) -> list[_Candidate]:
        """Convex fusion of the normalised lists, the recency boost, and the keyword #1 kept
        in view when it is a strong match. `trust` scales the dense list's share."""
        fused = self._fused_scores(dense, keyword, trust)
        # Source and mtime only: the text is read for the few shown (`_shown`).
        places = self.kb.chunk_places([f.id for f in fused])
        cosine = dict(dense)
        bm25 = dict(keyword)
        now = self._clock()
        out: list[_Candidate] = []
        for f in fused:
            place = places.get(f.id)
            if place is None:  # deleted between search and fetch (a sync is running)
                continue
            boost = recency_boost(
                place.mtime,
                now,
                days=self.settings.recency_days,
                boost=self.settings.recency_boost,
            )
            out.append(
                _Candidate(
                    id=f.id,
                    place=place,
                    rrf=f.score,
                    boost=boost,
                    fused=f.score * (1.0 + boost),
                    cosine=cosine.get(f.id),
                    dense_rank=f.ranks[0],
                    bm25=bm25.get(f.id),
                    keyword_rank=f.ranks[1],
                )
            )
        out.sort(key=lambda c: -c.fused)  # stable: fusion order among equals
        return self._keep_keyword_top(out, keyword, query)

    def _fused_scores(
        self, dense: list[tuple[str, float]], keyword: list[tuple[str, float]], trust: float
    ) -> list[Fused]:
        """Each candidate's fused score on [0, 1] (1 = first in both lists), best first."""
        if self.settings.fusion == "rrf":
            # Textbook RRF: ranks only, equal weights (the dense share scaled by `trust`),
            # divided by the best possible sum so scores read like the convex ones.
            weights = [trust, 1.0]
            ranked = rrf([[i for i, _ in dense], [i for i, _ in keyword]], RRF_K, weights)
            best = max_rrf(2, RRF_K) * sum(weights) / 2
            return [Fused(f.id, f.score / best, f.ranks) for f in ranked]
        share = self.settings.meaning_weight
        return convex([dense, keyword], [share * trust, 1.0 - share])

    def _keep_keyword_top(
        self, ranked: list[_Candidate], keyword: list[tuple[str, float]], query: str
    ) -> list[_Candidate]:
        """A keyword #1 that holds most of the query's terms (normalised keyword score at the
        gate's keyword threshold) is an exact match the user typed for: whatever the dense
        list thinks, it stays within the first KEEP_KEYWORD_TOP results."""
        if not keyword:
            return ranked
        top = keyword[0][0]
        index = next((i for i, c in enumerate(ranked) if c.id == top), None)
        if index is None or index < KEEP_KEYWORD_TOP:
            return ranked
        chunk = self.kb.get_chunks([top]).get(top)
        if chunk is None:  # deleted since ranking (a sync is running)
            return ranked
        coverage = term_coverage(self._tokenize(query), self._chunk_terms([chunk])[chunk.id])
        if coverage < self.settings.keyword_threshold:
            return ranked
        return keep_within(ranked, index, KEEP_KEYWORD_TOP)


def _source_of(candidate: _Candidate) -> str:
    return candidate.place.source


def _best(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _with_log_id(result: RetrievalResult, entry_id: int) -> RetrievalResult:
    from dataclasses import replace

    return replace(result, log_id=entry_id)
