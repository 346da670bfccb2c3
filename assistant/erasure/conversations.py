"""The conversation index as a trace holder: `conversation_index` is its trace eraser (a removal
of sessions takes their vectors and keyword segments along, whichever path deleted them), and
`purge_conversations` its purge hook (after its rows and keywords were deleted, its Chroma
collection is compacted and the sessions database scrubbed; see the package doc)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.context import AppContext
from assistant.erasure.removal import Removal

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex


def has_vectors(ctx: AppContext) -> bool:
    """Whether a vector store exists (opening one only to purge it would create it)."""
    return bool(ctx.config.store.vector_store) or ctx.paths.vectors_dir.exists()


def conversation_index(ctx: AppContext, removal: Removal) -> None:
    """Sessions were deleted: their units and keywords went with their rows (cascade,
    trigger); their vectors leave the collection now, the keyword segments are merged and the
    files purged. Forget-all (`"*"`) dropped the whole index itself."""
    path = ctx.paths.sessions_db
    if not removal.sessions or removal.sessions == ("*",) or not path.exists():
        return
    from assistant.chat.sessions import SessionStore
    from assistant.conversations.erase import forget_deleted
    from assistant.conversations.service import open_conversations

    store = SessionStore.open(path)
    try:
        forget_deleted(open_conversations(ctx, store), vectors=has_vectors(ctx))
    finally:
        store.close()


def purge_conversations(ctx: AppContext, index: ConversationIndex) -> None:
    if has_vectors(ctx):
        vectors = index.vectors()
        compact = getattr(vectors, "compact", None)
        if compact is not None:
            compact()
    index.store.scrub()
