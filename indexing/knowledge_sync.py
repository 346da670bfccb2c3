"""One knowledge sync or `--rebuild`, run by `KnowledgeBase.sync` under the index lock.

What it decides around `indexing/sync.py:Syncer` (which applies the disk's difference): which
registered folders a sync covers, whether the chunking settings changed (every folder is then
re-chunked), when the index switches to the configured model's collection and drops the old
one, and which store dense search reads afterwards (`serve`).

Loaded only when a sync runs (it imports chunking, sync and their readers): a search, and the
TUI's warm-up before "model ready", never need it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from indexing import vectors_match
from indexing.chunking import CHUNKER_VERSION
from indexing.errors import log_failure
from indexing.knowledge_snapshot import SnapshotKeeper
from indexing.knowledge_types import (
    META_CHUNKING,
    META_COLLECTION,
    META_DIMENSION,
    META_MODEL,
    FolderError,
    inside,
)
from indexing.manifest import SNAPSHOT_META, Manifest
from indexing.progress import ProgressCallback
from indexing.sync import Syncer, SyncSettings
from indexing.vector_errors import VectorStoreError

if TYPE_CHECKING:
    from indexing.embedder import Embedder
    from indexing.vectors import VectorStore

log = logging.getLogger(__name__)


def chunking_fingerprint(settings: SyncSettings) -> str:
    c = settings.chunking
    return (
        f"size={c.chunk_size} overlap={c.chunk_overlap} min={c.min_chunk_chars}"
        f" chunker={CHUNKER_VERSION}"
    )


def select_folders(folders: Sequence[str | os.PathLike[str]], registered: list[str]) -> list[str]:
    """The registered folders `folders` name (each once, in order); a path inside a registered
    folder selects that folder."""
    selected: list[str] = []
    for folder in folders:
        real = os.path.realpath(Path(folder).expanduser())
        # An exact registration wins over a parent still waiting for its first sync.
        match = real if real in registered else next(
            (p for p in registered if inside(real, p)), None
        )
        if match is None:
            raise FolderError(f"{folder} is not a registered folder (add it first)")
        if match not in selected:
            selected.append(match)
    return selected


@dataclass(frozen=True)
class KnowledgeSync:
    """The sync's inputs and the knowledge base's hooks it needs: `open_store(collection,
    model_id, dimension)`, `recorded_store()` (the collection the manifest names, None before
    the first sync), and `serve(store)`, told the store dense search reads (None: none yet)."""

    manifest: Manifest
    embedder: Embedder
    settings: SyncSettings
    progress: ProgressCallback | None
    snapshots: SnapshotKeeper
    open_store: Callable[[str, str, int], VectorStore]
    recorded_store: Callable[[], VectorStore | None]
    serve: Callable[[VectorStore | None], None]

    def sync_in(
        self,
        selected: list[str],
        registered: list[str],
        current: str,
        recorded: str | None,
        skip_vectors: bool = False,
    ) -> Syncer:
        """The sync proper. `skip_vectors`: the store is known to match the manifest
        (vectors_match.py): it is opened only when a change needs it, and not reconciled."""
        embedder = self.embedder
        chunking = chunking_fingerprint(self.settings)
        recorded_chunking = self.manifest.get_meta(META_CHUNKING)
        rechunk = recorded_chunking is not None and recorded_chunking != chunking
        if rechunk:
            selected = registered  # chunks of every folder must follow the new settings
        self.serve(None)
        if skip_vectors:
            syncer = Syncer(
                self.manifest,
                lambda: self.open_store(current, embedder.model_id, embedder.dimension),
                embedder, self.settings, self.progress, rechunk=rechunk,
                before_vector_write=lambda: vectors_match.forget(self.manifest),
                known=self.snapshots.by_content(current),
            )
            syncer.repair(vectors=False)
            syncer.sync_folders(selected)
            self.serve(syncer.opened_vectors)
            self._record_chunking(recorded_chunking, chunking)
            return syncer
        store = self.open_store(current, embedder.model_id, embedder.dimension)
        syncer = Syncer(
            self.manifest, store, embedder, self.settings, self.progress,
            rechunk=rechunk, known=self.snapshots.by_content(current),
        )
        syncer.repair()
        if recorded != current:
            # The new collection now holds every chunk: switch over, then forget the old.
            if recorded is not None:
                self._drop_recorded()
            self._switch_collection(current)
        self.serve(store)
        syncer.sync_folders(selected)
        self._record_chunking(recorded_chunking, chunking)
        return syncer

    def rebuild(
        self,
        registered: list[str],
        current: str,
        recorded: str | None,
        old: tuple[str | None, str | None],
    ) -> Syncer:
        """`--rebuild`, as the derived-index core's rebuild (that of the memory and
        conversation vectors too): SQLite (manifest, chunks, FTS) is rewritten from the files,
        then the store is reconciled with it. `old`: the recorded (model, dimension).

        The rewrite is one transaction around all its batches: until its commit every reader
        (other processes: WAL) sees the old index, and a kill or a cancel rolls back to it
        whole. A vector whose id is re-derived (same path, position and text hash, same model
        collection) is kept instead of being dropped and re-inserted, which costs Chroma more
        than embedding from the cache. Vectors it upserted meanwhile are orphans the old index
        ignores; the old collection (another model) is dropped after the commit, and the
        vectors no new chunk kept by the closing reconcile (a kill before it leaves orphans
        the next sync's reconcile deletes)."""
        embedder = self.embedder
        chunking = chunking_fingerprint(self.settings)
        recorded_chunking = self.manifest.get_meta(META_CHUNKING)
        self.serve(None)
        store = self.open_store(current, embedder.model_id, embedder.dimension)
        try:
            present = set(store.ids())
        except VectorStoreError as exc:  # every Chroma failure (guard): start it afresh
            log.warning("the collection %s cannot be read, started afresh: %s", current, exc)
            self.open_store(current, embedder.model_id, embedder.dimension).drop()
            store = self.open_store(current, embedder.model_id, embedder.dimension)
            present = set()
        syncer = Syncer(
            self.manifest, store, embedder, self.settings, self.progress,
            rechunk=recorded_chunking is not None and recorded_chunking != chunking,
            known=self.snapshots.by_content(current),
        )

        def rewrite() -> None:
            with self.manifest.transaction():
                self.manifest.clear_index()
                if recorded != current:
                    self._switch_collection(current)
                self.serve(store)
                syncer.sync_folders(registered)
                self._record_chunking(recorded_chunking, chunking)
            if recorded is not None and recorded != current and None not in old:
                try:
                    self.open_store(recorded, str(old[0]), int(str(old[1]))).drop()
                # An unreadable old collection (or its recorded dimension) must not fail
                # the rebuild: every Chroma failure is a VectorStoreError (chroma_clients.
                # guard), a damaged dimension int()'s ValueError.
                except (VectorStoreError, ValueError) as exc:
                    log_failure(log, f"could not drop the old collection {recorded}", exc)

        syncer.rebuild(rewrite, present)
        return syncer

    def _switch_collection(self, current: str) -> None:
        """Record `current` (this model's collection) as the index's."""
        with self.manifest.transaction():
            self.manifest.set_meta(META_MODEL, self.embedder.model_id)
            self.manifest.set_meta(META_DIMENSION, str(self.embedder.dimension))
            self.manifest.set_meta(META_COLLECTION, current)
            # The snapshot is of the old collection: the end of this sync writes the new
            # one's (before, searches asked Chroma until a chunk changed, and the new
            # model's cache kept every vector).
            self.manifest.set_meta(SNAPSHOT_META, None)
            self.manifest.set_model_for_all_files(self.embedder.model_id)

    def _record_chunking(self, recorded: str | None, chunking: str) -> None:
        if recorded != chunking:
            with self.manifest.transaction():
                self.manifest.set_meta(META_CHUNKING, chunking)

    def _drop_recorded(self) -> None:
        try:
            store = self.recorded_store()
        # An unreadable old collection must not block the switch: opening it fails as a
        # VectorStoreError (chroma_clients.guard), its recorded dimension as int()'s ValueError.
        except (VectorStoreError, ValueError) as exc:
            log_failure(log, "the old collection cannot be opened to drop it", exc)
            return
        if store is not None:
            store.drop()
