"""The words of a question that tell one conversation turn from another.

A word found in nearly every turn searched — the two names every line of a chat imported
between two people starts with ("Caroline: …", "Melanie: …") — cannot say which turn is meant.
BM25 gives it no weight already (its IDF is ~0 past half the items); the embedding model does:
"What did Caroline research?" is then close to everything Caroline said, and the turn about her
research drowns among them. So the dense ranking embeds the question without such words (its
topic: "What did research?"); the cosine shown with a hit, and read by the chat's recall gate,
stays that of the question as asked (the gate was calibrated on it: on LoCoMo 49% of evidence
turns reach its 0.45 as asked, 32% with the topic, while the best turn of an unrelated
conversation does 8% / 6% of the time). When a word is left out the question is thus embedded
twice, one more encoding (~7 ms on a quiet machine).

Measured on LoCoMo (bench/conversations.py, offline replay; "A / B" = conversations 1-5 /
6-10): MiniLM alone finds recall@5 / @10 0.47 / 0.58 of the evidence with the question as asked,
0.63 / 0.72 with its topic. Fused, with the neighbours' meaning (`dense_context`), at the former
dense weight 0.5: 0.733 / 0.805 → 0.740 / 0.814 (A 0.753 / 0.827 → 0.750 / 0.823, B 0.714 /
0.783 → 0.731 / 0.806; paired bootstrap 95% interval of the gain at @10 +0.005 to +0.021); the
better dense list then earns a larger weight (`search.SearchSettings`). Any share from "in half
the turns" (BM25's own limit) to "in 95%" gives the same: `COMMON_SHARE` is the cautious end,
which a small home's topic words are least likely to reach.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from indexing.tokenize import query_tokens

# A word is left out of the dense query when every token of it is in this share of the turns.
COMMON_SHARE = 0.9


def topic_text(text: str, common: Callable[[Sequence[str]], set[str]]) -> str:
    """`text` without the words whose every token `common` names; `text` itself when that
    would leave nothing of it, or nothing is left out."""
    words = text.split()
    tokens = [query_tokens(w) for w in words]
    found = common([t for ts in tokens for t in ts])
    if not found:
        return text
    kept = [(w, ts) for w, ts in zip(words, tokens, strict=True)
            if not ts or not set(ts) <= found]  # a stop word stays: "what did research?"
    if not any(ts for _, ts in kept):  # only stop words or common words: keep the question
        return text
    return " ".join(w for w, _ in kept)
