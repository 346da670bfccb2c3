"""The conversation index's purge hook: after its rows and keywords were deleted, its Chroma
collection is compacted and the sessions database scrubbed (see the package doc)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.context import AppContext

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex


def has_vectors(ctx: AppContext) -> bool:
    """Whether a vector store exists (opening one only to purge it would create it)."""
    return bool(ctx.config.store.vector_store) or ctx.paths.vectors_dir.exists()


def purge_conversations(ctx: AppContext, index: ConversationIndex) -> None:
    if has_vectors(ctx):
        vectors = index.vectors()
        compact = getattr(vectors, "compact", None)
        if compact is not None:
            compact()
    index.store.scrub()
