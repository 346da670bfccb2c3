"""Opening the knowledge base from the app's config: the bridge from `assistant` to `indexing`.

`indexing/` takes explicit settings dataclasses; this module is the one place that maps the
user's config (`[indexing]`, `[store]`, `[embedding]`) onto them, and that turns indexing's
exceptions into `UserError`s with hints for the CLI.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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

    with indexing_errors():
        embedder = ctx.embedder() if with_embedder else None
        return KnowledgeBase.open(
            ctx.paths.knowledge_db, vector_location(ctx), embedder, lock_timeout=lock_timeout
        )


def _user_error_types() -> tuple[type[BaseException], ...]:
    from indexing.knowledge import KnowledgeError
    from indexing.lock import IndexBusy
    from indexing.manifest import ManifestError

    types: list[type[BaseException]] = [KnowledgeError, IndexBusy, ManifestError]
    try:
        from indexing.embedder import EmbeddingModelError

        types.append(EmbeddingModelError)
    except ImportError:  # pragma: no cover - older checkouts
        pass
    try:
        from indexing.vectors import EmbeddingModelMismatch, VectorStoreError

        types += [EmbeddingModelMismatch, VectorStoreError]
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)


@contextmanager
def indexing_errors() -> Iterator[None]:
    """Re-raise indexing's user-facing exceptions as `UserError` (printed without traceback)."""
    try:
        yield
    except UserError:
        raise
    except Exception as exc:
        if isinstance(exc, _user_error_types()):
            hint = None
            from indexing.lock import IndexBusy

            if isinstance(exc, IndexBusy):
                hint = "wait for the other `brain index` (or the app's live sync) to finish"
            raise UserError(str(exc), hint=hint) from exc
        raise
