"""Finding events: by meaning, words, time range, type and importance, in one blended score.

Candidates come from the vectors (`matrix.py`, filters applied first) and the keyword index
(filtered after). Each candidate's relevance is half its cosine (clamped at 0) and half its
BM25 score divided by the best keyword hit's, the blend memory recall uses, so an event naming
a rare identifier (`login_handler`, `ERR_42`) is found even where the embedding misses it. The
score is

    weight_relevance * relevance + weight_importance * importance
        + weight_recency * exp(-age_days / recency_days)

with the weights of `[events]` in the config. Without a query relevance is 0: the filtered
events are ranked by importance and recency alone. A summary gets at least the importance of
the events it covers (summaries.py), so a question about a run finds its summary first.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from assistant.config import EventsConfig
from assistant.events.matrix import NO_FILTERS, EventMatrix, Filters, passes
from assistant.events.model import Event, EventHit
from assistant.events.store import EventStore
from indexing.embedder import Embedder

KEYWORD_SHARE = 0.5  # weight of the normalised BM25 score inside relevance
MIN_POOL = 50  # candidates taken from each list, at least
COMMON_SHARE = 0.05  # a word in this share of the events or more re-ranks, it does not find
PENDING_BY_WORDS = 1_000  # events without a vector yet that common words can still find


@dataclass(frozen=True, slots=True)
class EventWeights:
    relevance: float = 0.6
    importance: float = 0.25
    recency: float = 0.15
    recency_days: float = 7.0


def search_events(
    store: EventStore,
    query: str | None,
    *,
    filters: Filters = NO_FILTERS,
    top_k: int = 10,
    weights: EventWeights = EventWeights(),
    embedder: Embedder | None = None,
    matrix: EventMatrix | None = None,
    now: float | None = None,
) -> list[EventHit]:
    """The best `top_k` events for `query` (None or blank: every event) passing `filters`."""
    now = time.time() if now is None else now
    pool = max(MIN_POOL, top_k * 5)
    cosines: dict[str, float] = {}
    keywords: dict[str, float] = {}
    events: dict[str, Event] = {}
    text = (query or "").strip()
    if text:
        if embedder is not None and matrix is not None:
            cosines = dict(matrix.search(embedder.embed_query(text), pool, filters))
            found = _keyword_hits(store, text, pool, cosines)
        else:
            found = store.keyword_search(text, pool)
        # One read of the keyword candidates: filtered here, kept for the ranking below.
        events = {i: e for i, e in store.get_many([i for i, _ in found]).items()
                  if passes(e, filters)}
        keywords = {i: s for i, s in found if i in events}
        ids = list(dict.fromkeys([*cosines, *keywords]))
        events |= store.get_many([i for i in cosines if i not in events])
    else:
        listed = store.list(
            types=filters.types, since=filters.since, until=filters.until,
            session=filters.session, min_importance=filters.min_importance, limit=pool * 10)
        events = {e.id: e for e in listed}
        ids = list(events)
    best_keyword = max(keywords.values(), default=0.0)
    hits = []
    for event_id in ids:
        event = events.get(event_id)
        if event is None:  # removed meanwhile
            continue
        cosine = cosines.get(event_id)
        keyword = keywords[event_id] / best_keyword if event_id in keywords and best_keyword \
            else None
        relevance = 0.0
        if text:
            relevance = ((1 - KEYWORD_SHARE) * max(cosine or 0.0, 0.0)
                         + KEYWORD_SHARE * (keyword or 0.0))
            if embedder is None or matrix is None:
                relevance = keyword or 0.0  # words are the only evidence
        age_days = max(now - event.ts, 0.0) / 86_400
        score = (weights.relevance * relevance + weights.importance * event.importance
                 + weights.recency * math.exp(-age_days / weights.recency_days))
        hits.append(EventHit(event, score, relevance, cosine, keyword))
    hits.sort(key=lambda h: (-h.score, -h.event.ts))
    return hits[:top_k]


def _keyword_hits(store: EventStore, text: str, pool: int,
                  cosines: dict[str, float]) -> list[tuple[str, float]]:
    """The BM25 hits beside a search by meaning.

    A query of common words only (each in COMMON_SHARE of the events or more: "ran the
    tests") makes FTS5 score most of the log: 43 ms of CPU at 50k events, four times the
    vector search. Such words say little about which events are meant, so they then only
    re-rank the events meaning found and those not embedded yet (a just-logged event is still
    found by its words). A query with a rarer word (an identifier, an error code) searches
    every event by its words as before: that is how `ERR_42` is found where the embedding
    misses it."""
    shares = store.word_shares(text)
    if not shares or min(shares) < COMMON_SHARE:
        return store.keyword_search(text, pool)
    unembedded = [i for i, _ in store.pending(PENDING_BY_WORDS, model_id="", newest_first=True,
                                              stale=False)]
    return store.keyword_search(text, pool, ids=[*cosines, *unembedded])


def weights_from(config: EventsConfig) -> EventWeights:
    """The weights of the config's `[events]` section."""
    return EventWeights(config.weight_relevance, config.weight_importance,
                        config.weight_recency, config.recency_days)
