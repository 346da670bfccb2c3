"""Searching past conversations by meaning, words and date.

The question's time phrase (or the `--since/--until` flags) becomes a date filter and leaves the
text; the rest is searched in the dense and keyword indexes of the conversation units, restricted
to the units of that period, and the two rankings are fused by the knowledge retrieval's RRF.
The dense ranking reads the question without the words found in nearly every turn (`topic`) and
scores each turn with its neighbours' meaning (`dense_context`), as its keyword text holds their
words (`documents.turn_doc`).
A range read from the question that holds no conversation at all is dropped (and reported as not
applied): "what did Caroline do two years ago" is about the events, not about when they were
discussed, and must not come back empty. Flags are never dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from assistant.conversations.dense_context import context_scores
from assistant.conversations.topic import topic_text
from assistant.errors import UserError
from assistant.logfile import TO_USER
from assistant.retrieval.fusion import rrf
from assistant.retrieval.weights import dense_weight as language_dense_weight
from assistant.timephrases import split_query
from assistant.timerange import TimeRange, local_now
from indexing.vector_errors import VectorStoreReadOnly

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """Tuned on LoCoMo (bench/conversations.py; recall@5 / @10 over its 1,536 questions; "A / B"
    = conversations 1-5 / 6-10, the 2-fold check against tuning to the set).
    Before the dense query's topic (`topic`): RRF k 60 with equal weights 0.653 / 0.743 (with the
    keyword context of `turn_doc`), k 10 with the dense list at 0.5 0.727 / 0.800; MiniLM alone
    0.47 / 0.58 there, BM25 alone 0.71 / 0.78. With the topic and the neighbours' meaning
    (`dense_context`) MiniLM alone finds 0.63 / 0.72 and earns a larger share: dense 0.5 0.740 /
    0.814, 0.6-0.8 a plateau at k 10 (0.742-0.744 / 0.820-0.823), 0.7 0.743 / 0.822 (A 0.754 /
    0.831, B 0.732 / 0.814), 1.0 0.734 / 0.823; k 5 / 20 / 60 at 0.7: 0.742 / 0.820, 0.737 /
    0.820, 0.734 / 0.807. Chosen on one half, reported on the other: (0.7, k 5) on A gives B
    0.726 / 0.812, (0.7, k 10) on B gives A 0.754 / 0.831 (the former setting: 0.731 / 0.806 and
    0.750 / 0.823)."""

    top_k: int = 5
    candidates: int = 50  # per retriever, before fusion (20: -0.01, 100: +0.00)
    rrf_k: int = 10
    dense_weight: float = 0.7
    keyword_weight: float = 1.0
    # The dense ranking's share of each turn's window meaning (`dense_context`); 0 = own only.
    context_share: float = 0.5


@dataclass(frozen=True, slots=True)
class ConversationHit:
    rank: int
    unit_id: str
    session_id: str
    title: str
    seq: int | None  # None: the hit is the session itself (its title and summary)
    created_at: float
    question: str
    answer: str
    # Relevance 0-1 as shown: the cosine to the question (the keyword score when the dense
    # list is not trusted for it); None for a period listed without a topic. Never the fused
    # score over the best possible: rank 1 of one list alone read as 41% whatever its cosine.
    score: float | None
    vector: float | None  # cosine similarity
    keyword: float | None  # BM25 normalised to the best keyword hit (0-1)
    fused: float
    refs: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "session": self.session_id,
            "title": self.title,
            "seq": self.seq,
            "created_at": _iso(self.created_at),
            "question": self.question,
            "answer": self.answer,
            "score": None if self.score is None else round(self.score, 4),
            "scores": {
                "vector": None if self.vector is None else round(self.vector, 4),
                "keyword": None if self.keyword is None else round(self.keyword, 4),
                "fused": round(self.fused, 6),
            },
            "refs": list(self.refs),
        }


@dataclass(frozen=True, slots=True)
class ConversationResult:
    query: str
    search_text: str  # what the retrievers saw (the time phrase removed)
    time_range: TimeRange | None
    applied: bool  # False: a range read from the question matched no conversation, not used
    hits: list[ConversationHit] = field(default_factory=list)
    dense_trusted: bool = True  # False: the dense list is noise for this query (weights.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "time_range": None if self.time_range is None
            else self.time_range.to_json() | {"applied": self.applied},
            "hits": [h.to_json() for h in self.hits],
        }


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def search_conversations(
    index: ConversationIndex,
    query: str,
    *,
    time_range: TimeRange | None = None,
    top_k: int | None = None,
    settings: SearchSettings = SearchSettings(),
    now: datetime | None = None,
    exclude_session: str | None = None,
) -> ConversationResult:
    """The best `top_k` units for `query` within `time_range` (else a phrase in the query)."""
    top_k = settings.top_k if top_k is None else top_k
    if top_k < 1:
        raise UserError(f"--top-k must be at least 1, got {top_k}")
    if not query.strip() and time_range is None:
        raise UserError("nothing to search for", hint='brain sessions search "what did we …"')
    text, rng = split_query(query.strip(), now or local_now(), explicit=time_range)
    allowed: list[str] | None = None
    applied = rng is not None
    if rng is not None:
        allowed = index.units_between(*rng.bounds)
        if not allowed and rng.origin == "query":
            allowed, applied, text = None, False, query.strip()
    if exclude_session is not None:  # the chat's own session is in its visible history
        keep = set(index.units_between(*(rng.bounds if applied and rng else (None, None)),
                                       exclude_session=exclude_session))
        allowed = [u for u in allowed if u in keep] if allowed is not None else sorted(keep)
    result = ConversationResult(query, text, rng, applied)
    if allowed is not None and not allowed:
        return result
    ranked = _rank(index, text, allowed, settings, top_k)
    # (a period listed without a topic ran no retriever: no model to load for this)
    trusted = all(r[2] is None for r in ranked) or language_dense_weight(
        text, index.embedder().model_id) >= 1.0
    return replace(result, hits=_hits(index, ranked, top_k, trusted), dense_trusted=trusted)


_Ranked = list[tuple[str, float, float | None, float | None]]  # id, fused, cosine, keyword


def _rank(
    index: ConversationIndex,
    text: str,
    allowed: list[str] | None,
    settings: SearchSettings,
    top_k: int,
) -> _Ranked:
    pool = max(settings.candidates, top_k)
    if not text.strip(" ?？!！.。,，"):
        # Only a time phrase ("yesterday?"): everything of that period, latest first.
        latest = (allowed or [])[:top_k]
        only = (settings.dense_weight + settings.keyword_weight) / (settings.rrf_k + 1)
        return [(u, only, None, None) for u in latest]
    embedder = index.embedder()
    query_vector = embedder.embed_query(text)
    # The dense ranking reads the question without the words of nearly every turn (`topic`).
    topic = topic_text(text, index.common_terms)
    topic_vector = query_vector if topic == text else embedder.embed_query(topic)
    dense: list[tuple[str, float, float]] = []
    fetched: dict[str, np.ndarray] = {}
    try:
        dense = [(i, c, c) for i, c in index.dense(topic_vector, pool, allowed)]
        if settings.context_share > 0:
            dense, fetched = _with_context(index, topic_vector, [(i, c) for i, _, c in dense],
                                           allowed, settings.context_share)
        vectors_usable = True
    except VectorStoreReadOnly as exc:  # a read-only home: the keywords answer, and it is said
        log.warning("%s Searching conversations by keywords only.", exc.message,
                    extra=TO_USER)
        vectors_usable = False
    keyword = index.keyword(text, pool, allowed)
    # Chinese on an English-only model: the knowledge retrieval's rule (its dense ranking of
    # such a query is noise).
    dense_weight = settings.dense_weight * language_dense_weight(text, embedder.model_id)
    fused = rrf([[i for i, _, _ in dense[:pool]], [i for i, _ in keyword]], k=settings.rrf_k,
                weights=[dense_weight, settings.keyword_weight])[:top_k]
    # The cosine shown (and gated on) is the question's as asked.
    cosine = ({i: c for i, _, c in dense} if topic == text else
              {f.id: float(fetched[f.id] @ query_vector) for f in fused if f.id in fetched})
    if vectors_usable:
        cosine.update(index.cosines(query_vector, [f.id for f in fused if f.id not in cosine]))
    best_bm25 = max((s for _, s in keyword), default=0.0)
    bm25 = dict(keyword)
    return [
        (f.id, f.score, cosine.get(f.id),
         bm25[f.id] / best_bm25 if f.id in bm25 and best_bm25 > 0 else None)
        for f in fused
    ]


def _with_context(
    index: ConversationIndex,
    query_vector: np.ndarray,
    dense: list[tuple[str, float]],
    allowed: list[str] | None,
    share: float,
) -> tuple[list[tuple[str, float, float]], dict[str, np.ndarray]]:
    """The nearest units re-ranked with their neighbours' meaning (`dense_context`): the
    nearest by own cosine and their allowed neighbours are the candidates, each scored with its
    own window. `(id, dense score, own cosine)`, best first, and the vectors read."""
    ids = [i for i, _ in dense]
    near = index.neighbours(ids)
    permitted = None if allowed is None else set(allowed)
    added = list(dict.fromkeys(n for i in ids for n in near.get(i, ())
                               if n not in near and (permitted is None or n in permitted)))
    near.update(index.neighbours(added))
    candidates = ids + added
    wanted = set(candidates) | {n for c in candidates for n in near.get(c, ())}
    vectors = index.stored_vectors(sorted(wanted))
    return context_scores(query_vector, candidates, vectors, near, share=share), vectors


def _hits(
    index: ConversationIndex, ranked: _Ranked, top_k: int, dense_trusted: bool
) -> list[ConversationHit]:
    if not ranked:
        return []
    ids = [r[0] for r in ranked]
    marks = ",".join("?" * len(ids))
    with index.store.lock:
        conn = index.store.conn
        rows = {r[0]: r for r in conn.execute(
            "SELECT u.id, u.session_id, s.title, t.seq, u.created_at, t.question, t.answer, "
            "COALESCE(ss.text, '') FROM conversation_units u "
            "JOIN sessions s ON s.id = u.session_id "
            "LEFT JOIN turns t ON t.id = u.turn_id "
            f"LEFT JOIN session_summaries ss ON ss.session_id = u.session_id "
            f"WHERE u.id IN ({marks})", ids)}
        refs: dict[str, list[str]] = {}
        for unit_id, ref in conn.execute(
                "SELECT u.id, r.ref FROM conversation_units u JOIN turn_refs r "
                f"ON r.turn_id = u.turn_id WHERE u.id IN ({marks}) "
                "ORDER BY u.id, CASE r.role WHEN 'user' THEN 0 ELSE 1 END", ids):
            refs.setdefault(unit_id, []).append(ref)
    hits: list[ConversationHit] = []
    for unit_id, fused, cosine, keyword in ranked:
        row = rows.get(unit_id)
        if row is None:  # deleted between ranking and reading
            continue
        is_turn = row[3] is not None
        hits.append(ConversationHit(
            rank=len(hits) + 1, unit_id=unit_id, session_id=row[1], title=row[2],
            seq=int(row[3]) if is_turn else None, created_at=float(row[4]),
            question=row[5] if is_turn else "", answer=row[6] if is_turn else row[7],
            score=_relevance(cosine, keyword, dense_trusted), vector=cosine, keyword=keyword,
            fused=fused,
            refs=tuple(refs.get(unit_id, ())),
        ))
        if len(hits) >= top_k:
            break
    return hits


def _relevance(cosine: float | None, keyword: float | None, dense_trusted: bool) -> float | None:
    if cosine is None and keyword is None:
        return None
    if not dense_trusted:
        return keyword or 0.0
    return max(0.0, min(1.0, cosine or 0.0))
