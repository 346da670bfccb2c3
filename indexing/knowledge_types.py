"""The knowledge base's vocabulary: its errors, the folder records its operations return, and
how its Chroma collection is named and recorded (manifest meta keys). Kept apart from
`KnowledgeBase` (knowledge.py) so callers that only name these load nothing else."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from indexing import derived_index
from indexing.errors import HintedError

META_MODEL = "model_id"
META_DIMENSION = "dimension"
META_COLLECTION = "collection"
META_CHUNKING = "chunking"


class KnowledgeError(HintedError):
    """A knowledge-base problem the user can act on; the message says how."""


class FolderError(KnowledgeError):
    """A folder that cannot be registered or removed (missing, a file, unreadable, unknown)."""


class ReembedNeeded(KnowledgeError):
    """The index was embedded with another model; dense search needs a re-sync first."""

    def __init__(self, indexed_with: str, configured: str) -> None:
        super().__init__(
            f"the index was built with embedding model {indexed_with!r} but {configured!r} is "
            "configured; run `brain index --sync` to re-embed it (embeddings already computed "
            "for a model are reused from the cache)"
        )
        self.indexed_with = indexed_with
        self.configured = configured


@dataclass(frozen=True, slots=True)
class FolderInfo:
    path: str
    files: int
    chunks: int
    added_at: datetime
    last_sync: datetime | None  # UTC; None until the first sync finishes


@dataclass(frozen=True, slots=True)
class FolderAdded:
    path: str  # the resolved folder
    status: str  # "added" | "already" (registered before) | "inside" (covered by `parent`)
    parent: str | None = None
    absorbed: tuple[str, ...] = ()  # registered sub-folders its first successful sync absorbs


@dataclass(frozen=True, slots=True)
class FolderRemoved:
    path: str
    files: int
    chunks: int
    # Embedding-cache keys of the removed chunks that no remaining chunk shares: the caller
    # erases them from the cache (indexing.embedding_cache.erase_cached).
    cache_keys: frozenset[str] = frozenset()
    earlier: bool = False  # removed before (a re-run of a completed removal): nothing to do


@dataclass(frozen=True, slots=True)
class FolderRemoval:
    """What `remove_folder` will erase: the folder, its chunks and their content hashes."""

    path: str
    files: int
    chunk_ids: tuple[str, ...]
    hashes: frozenset[str]


def collection_name(model_id: str, dimension: int) -> str:
    return derived_index.collection_name("knowledge", model_id, dimension)


def resolve_folder(path: str | os.PathLike[str]) -> Path:
    """The real, absolute folder for user input; FolderError when it is not a usable folder."""
    given = Path(path).expanduser()
    if not given.exists():
        raise FolderError(f"no such folder: {given}")
    if not given.is_dir():
        raise FolderError(f"{given} is a file, not a folder (index the folder that contains it)")
    real = Path(os.path.realpath(given))
    if not os.access(real, os.R_OK | os.X_OK):
        raise FolderError(f"cannot read folder {real}: permission denied")
    return real


def inside(child: str, parent: str) -> bool:
    return child != parent and child.startswith(parent.rstrip("/") + "/")
