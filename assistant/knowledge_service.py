"""Opening the knowledge base from the app's config: the bridge from `assistant` to `indexing`.

`indexing/` takes explicit settings dataclasses; this module is the one place that maps the
user's config (`[indexing]`, `[store]`, `[embedding]`) onto them. Indexing's user-facing errors
need no translation: they are `HintedError`s like the assistant's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import Config
from assistant.context import AppContext
from assistant.errors import UserError

if TYPE_CHECKING:
    from indexing.knowledge import KnowledgeBase
    from indexing.sync import SyncSettings


def sync_settings(config: Config) -> SyncSettings:
    """`[indexing]` → what the walker, the chunker and the sync need."""
    from indexing.chunking import ChunkSettings
    from indexing.sources import SourceSettings
    from indexing.sync import DEFAULT_BATCH_CHUNKS, SyncSettings

    ix = config.indexing
    try:
        chunking = ChunkSettings(chunk_size=ix.chunk_size, chunk_overlap=ix.chunk_overlap)
    except ValueError as exc:
        where = f" in {config.source}" if config.source else ""
        raise UserError(f"[indexing] settings{where}: {exc}") from exc
    return SyncSettings(
        sources=SourceSettings(
            include=tuple(ix.include),
            exclude=tuple(ix.exclude),
            respect_gitignore=ix.respect_gitignore,
            max_file_bytes=int(ix.max_file_mb * 1024 * 1024),
        ),
        chunking=chunking,
        # Whole model batches per round trip, so no batch is sent half-full.
        batch_chunks=max(
            config.embedding.batch_size,
            DEFAULT_BATCH_CHUNKS // config.embedding.batch_size * config.embedding.batch_size,
        ),
    )


def vector_location(ctx: AppContext) -> str | Path:
    """`store.vector_store` (a Chroma server URL) or the embedded store in the data dir."""
    url = ctx.config.store.vector_store.strip()
    if url:
        if not url.startswith(("http://", "https://")):
            raise UserError(
                f"store.vector_store must be an http:// or https:// URL, got {url!r}",
                hint="leave it empty to use the embedded store in the data folder",
            )
        return url.rstrip("/")
    return ctx.paths.vectors_dir


def open_knowledge(
    ctx: AppContext, *, with_embedder: bool = True, lock_timeout: float = 5.0
) -> KnowledgeBase:
    """The knowledge base of this home; `with_embedder=False` avoids loading the model
    (listing and removing folders, keyword search)."""
    from indexing.knowledge import KnowledgeBase

    embedder = ctx.embedder() if with_embedder else None
    return KnowledgeBase.open(
        ctx.paths.knowledge_db, vector_location(ctx), embedder, lock_timeout=lock_timeout
    )
