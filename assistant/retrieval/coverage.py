"""Is dense search seeing the whole index? A deleted or emptied vector store leaves search
working on keywords alone, which must not go unnoticed."""

from __future__ import annotations

# Below this share of chunks with a vector, the gap is not a sync in flight but a lost store.
MIN_VECTOR_SHARE = 0.9

REPAIR_HINT = "repair with `brain index --sync`"


def vector_gap_warning(vectors: int, chunks: int) -> str | None:
    """A warning when the vector collection holds far fewer vectors than the index has
    chunks; None when it covers them (or nothing is indexed)."""
    if chunks <= 0 or vectors >= chunks * MIN_VECTOR_SHARE:
        return None
    if vectors <= 0:
        return (f"the vector store holds no vectors for the {chunks} indexed chunks (was it "
                f"deleted?): searching by keywords only; {REPAIR_HINT}")
    return (f"only {vectors} of {chunks} indexed chunks have a vector: meaning-based search "
            f"misses the rest; {REPAIR_HINT}")
