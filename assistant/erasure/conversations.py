"""The conversation index as a trace holder: `conversation_index` is its trace eraser (a removal
of sessions takes their vectors and keyword segments along, whichever path deleted them).
Its purge hook (Chroma compacted, the sessions database scrubbed) is `conversations.service
.purge_conversations`, beside the index it purges; see the package doc."""

from __future__ import annotations

from assistant.conversations.erase import forget_deleted
from assistant.erasure.removal import Removal
from assistant.erasure.stores import Stores


def conversation_index(stores: Stores, removal: Removal) -> None:
    """Sessions were deleted: their units and keywords went with their rows (cascade,
    trigger); their vectors leave the collection now, the keyword segments are merged and the
    files purged. Forget-all (`"*"`) dropped the whole index itself."""
    if (not removal.sessions or removal.sessions == ("*",)
            or not stores.ctx.paths.sessions_db.exists()):
        return
    from assistant.conversations.service import has_vectors

    forget_deleted(stores.conversations(), vectors=has_vectors(stores.ctx))
