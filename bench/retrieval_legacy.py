"""The retrieval configuration before issue 17, kept only as the benchmark's baseline.

Chunk-level RRF (k=60) of 50 dense and 50 BM25 candidates, with the word-shape weight rule
(keyword list weighted 0.5 for plain-word questions of three or more words, dense list 0.1 for
Chinese queries on an English-only model), no per-file cap, and the gate on the global dense
#1 (cosine >= 0.44) or keyword #1 (normalised >= 0.55). Measured in the same run as the
current pipeline so the two compare on one machine and one index.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assistant.retrieval.fusion import rrf
from assistant.retrieval.scores import keyword_score, term_coverage

CANDIDATES = 50
RRF_K = 60
COSINE_THRESHOLD = 0.44
KEYWORD_THRESHOLD = 0.55

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*")
_IDENTIFIER = re.compile(r"[A-Za-z0-9][-_.][A-Za-z0-9]|[a-z][A-Z]|\d")


def _is_cjk(text: str) -> bool:
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk / 2 >= len(_LATIN_WORD.findall(text))


def weights(query: str, english_only: bool) -> tuple[float, float]:
    """(dense weight, keyword weight) of the old word-shape rule."""
    if _is_cjk(query):
        return (0.1 if english_only else 1.0), 1.0
    words = _LATIN_WORD.findall(query)
    natural = len(words) >= 3 and not any(_IDENTIFIER.search(w) for w in words)
    return 1.0, (0.5 if natural else 1.0)


@dataclass(frozen=True, slots=True)
class LegacyResult:
    chunk_ids: list[str]  # fused order
    best_cosine: float | None
    best_keyword: float | None

    def low_confidence(self) -> bool:
        dense_ok = self.best_cosine is not None and self.best_cosine >= COSINE_THRESHOLD
        kw_ok = self.best_keyword is not None and self.best_keyword >= KEYWORD_THRESHOLD
        return not (dense_ok or kw_ok)


def search(kb: Any, embedder: Any, query: str, *, english_only: bool,
           tokenize: Callable[[str], list[str]]) -> LegacyResult:
    dense = kb.dense_search(embedder.embed_query(query), CANDIDATES)
    keyword = kb.keyword_search(query, CANDIDATES)
    wd, wk = weights(query, english_only)
    fused = rrf([[i for i, _ in dense], [i for i, _ in keyword]], k=RRF_K, weights=[wd, wk])
    best_keyword = None
    if keyword:
        top = kb.get_chunks([keyword[0][0]]).get(keyword[0][0])
        if top is not None:
            best_raw = keyword[0][1]
            best_keyword = keyword_score(
                best_raw, best_raw, term_coverage(tokenize(query), tokenize(top.text))
            )
    best_cosine = dense[0][1] if dense and wd >= 0.5 else None
    return LegacyResult([f.id for f in fused], best_cosine, best_keyword)
