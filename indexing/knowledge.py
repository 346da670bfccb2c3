"""`KnowledgeBase`: the one facade `assistant/` uses over the manifest, keywords and vectors.

SQLite (manifest + chunks + FTS) is the source of truth; the Chroma collection is derived from it
and named after the embedding model, so a model change never meets a collection of the wrong
dimension: the new model gets a fresh collection that the next sync fills (from the embedding
cache where it can), then the old one is dropped.

Writers (sync, folder add/remove) take an exclusive file lock next to the database; readers never
block (SQLite WAL).
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from indexing import vectors_match
from indexing.clock import EpochClock, wall_clock
from indexing.knowledge_snapshot import SnapshotKeeper
from indexing.knowledge_types import (
    META_COLLECTION,
    META_DIMENSION,
    META_MODEL,
    FolderAdded,
    FolderError,
    FolderInfo,
    FolderRemoval,
    FolderRemoved,
    KnowledgeError,
    ReembedNeeded,
    collection_name,
    inside,
    resolve_folder,
)
from indexing.lock import IndexLock
from indexing.manifest import CACHE_TRIM_META, SNAPSHOT_META, Manifest
from indexing.types import Chunk, ChunkPlace
from indexing.vector_errors import VectorStoreError

# Chunking and sync (with their readers and gitignore matching, in knowledge_sync.py) load only
# when a sync runs: a search, and the TUI's warm-up before "model ready", never need them.
if TYPE_CHECKING:
    from indexing.embedder import Embedder
    from indexing.progress import ProgressCallback
    from indexing.sync import SyncReport, SyncSettings
    from indexing.vectors import VectorStore

# How long a vector count stays trusted (another process's sync can change it).
COVERAGE_TTL = 30.0
GLOB_CHARS = frozenset("*?[")


def _when(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


class KnowledgeBase:
    def __init__(
        self,
        manifest: Manifest,
        vector_location: str | Path,
        embedder: Embedder | None,
        lock: IndexLock,
    ) -> None:
        self.manifest = manifest
        self.vector_location = vector_location
        self.embedder = embedder
        self.lock = lock
        self._vectors: VectorStore | None = None
        # (vectors, chunks, when counted): see vector_coverage
        self._coverage: tuple[int, int, float] | None = None
        self._snapshots = SnapshotKeeper(manifest, vector_location)  # a search without Chroma

    @classmethod
    def open(
        cls,
        db_path: Path,
        vector_location: str | Path,
        embedder: Embedder | None = None,
        *,
        lock_timeout: float = 5.0,
        clock: EpochClock = wall_clock,
    ) -> KnowledgeBase:
        """Open (creating if needed) the index at `db_path` with vectors at `vector_location`.

        Without an embedder the base can list and remove folders and run keyword search, but not
        sync or dense search (listing folders must not load a model).
        """
        manifest = Manifest.open(Path(db_path), clock=clock)
        lock = IndexLock(Path(str(db_path) + ".lock"), timeout=lock_timeout)
        return cls(manifest, vector_location, embedder, lock)

    def close(self) -> None:
        self.manifest.close()

    # --- model / collection -----------------------------------------------------------------

    @property
    def indexed_model(self) -> str | None:
        """The embedding model the vectors were built with (None for an empty new index)."""
        return self.manifest.get_meta(META_MODEL)

    @property
    def reembed_needed(self) -> bool:
        """True when the configured model differs from the one the index was built with."""
        if self.embedder is None:
            return False
        recorded = self.manifest.get_meta(META_COLLECTION)
        if recorded is None:
            return False
        return recorded != collection_name(self.embedder.model_id, self.embedder.dimension)

    def _require_embedder(self) -> Embedder:
        if self.embedder is None:
            raise KnowledgeError("this operation needs the embedding model; open with an embedder")
        return self.embedder

    def _open_store(self, collection: str, model_id: str, dimension: int) -> VectorStore:
        from indexing.vectors import VectorStore

        return VectorStore.open(
            self.vector_location, collection, model_id=model_id, dimension=dimension
        )

    def _recorded_store(self) -> VectorStore | None:
        collection = self.manifest.get_meta(META_COLLECTION)
        model = self.manifest.get_meta(META_MODEL)
        dimension = self.manifest.get_meta(META_DIMENSION)
        if collection is None or model is None or dimension is None:
            return None
        return self._open_store(collection, model, int(dimension))

    def vectors(self) -> VectorStore | None:
        """The collection dense search reads: the current model's once it is complete."""
        if self._vectors is None:
            if self.embedder is not None and not self.reembed_needed:
                e = self.embedder
                self._vectors = self._open_store(
                    collection_name(e.model_id, e.dimension), e.model_id, e.dimension
                )
            elif self.embedder is None:
                self._vectors = self._recorded_store()
        return self._vectors

    def vector_coverage(self) -> tuple[int, int] | None:
        """(vectors in the collection dense search reads, chunks in the manifest): counts
        only, no model call. Cached until this base syncs or removes a folder, and for at most
        COVERAGE_TTL seconds (another process may have synced). None when dense search has
        no collection (nothing indexed yet, or a re-embed is pending)."""
        cached = self._coverage
        if cached is not None and time.monotonic() - cached[2] < COVERAGE_TTL:
            return cached[0], cached[1]
        if self.reembed_needed:
            return None
        snapshot = self._snapshots.fresh()
        if snapshot is not None:  # it matches the manifest: no need to open Chroma to count
            _files, chunks = self.manifest.totals()
            self._coverage = (len(snapshot.ids), chunks, time.monotonic())
            return len(snapshot.ids), chunks
        store = self.vectors()
        if store is None:
            return None
        _files, chunks = self.manifest.totals()
        vectors = store.count()
        self._coverage = (vectors, chunks, time.monotonic())
        return vectors, chunks

    # --- folders ----------------------------------------------------------------------------

    def folders(self) -> list[FolderInfo]:
        files = self.manifest.file_counts()
        chunks = self.manifest.chunk_counts()
        return [
            FolderInfo(
                path=f.path,
                files=files.get(f.path, 0),
                chunks=chunks.get(f.path, 0),
                added_at=_when(f.added_at) or datetime.now(UTC),
                last_sync=_when(f.last_sync),
            )
            for f in self.manifest.folders()
        ]

    def add_folder(self, path: str | os.PathLike[str]) -> FolderAdded:
        """Register a folder (no indexing yet: call `sync`).

        Nested registrations collapse to the outermost folder: adding a folder inside a
        registered one changes nothing (it is already indexed); adding a parent of registered
        folders registers it beside them, and its first successful sync absorbs them (keeping
        their indexed files and chunks, no re-embedding). Until then they stay registered as
        they were: a parent whose sync fails (e.g. `/`) never takes their place.
        """
        real = str(resolve_folder(path))
        with self.lock:
            registered = [f.path for f in self.manifest.folders()]
            if real in registered:
                return FolderAdded(real, "already")
            for parent in registered:
                if inside(real, parent):
                    return FolderAdded(real, "inside", parent=parent)
            children = tuple(p for p in registered if inside(p, real))
            with self.manifest.transaction():
                self.manifest.add_folder(real, self.manifest.clock())
        return FolderAdded(real, "added", absorbed=children)

    def remove_folder(self, path: str | os.PathLike[str]) -> FolderRemoved:
        """Unregister a folder and delete its files' chunks from SQLite, FTS and Chroma."""
        return self.finish_removal(self.plan_removal(path))

    def plan_removal(self, path: str | os.PathLike[str]) -> FolderRemoval:
        """What removing this registered folder erases (nothing is changed yet): recorded by
        the caller as its intent before `finish_removal`, so a crash in between can be
        finished later from the record."""
        given = Path(path).expanduser()
        candidates = {str(given.absolute()), os.path.realpath(given)}
        registered = [f.path for f in self.manifest.folders()]
        match = next((p for p in registered if p in candidates), None)
        if match is None:
            parent = next((p for p in registered if any(inside(c, p) for c in candidates)), None)
            hint = (
                f"; it is part of {parent} — add it to indexing.exclude to leave it out"
                if parent
                else ""
            )
            raise FolderError(f"{given} is not a registered folder{hint}")
        files = self.manifest.files(match)
        ids = self.manifest.chunk_ids_for_sources(files)
        return FolderRemoval(match, len(files), tuple(ids),
                             frozenset(self.manifest.content_hashes(ids)))

    def finish_removal(self, plan: FolderRemoval) -> FolderRemoved:
        """Erase what `plan` names; idempotent, so an interrupted removal is finished by
        running it again (the folder may be unregistered already: its vectors, free pages and
        snapshot are still cleaned)."""
        self._coverage = None
        with self.lock:
            vectors_match.forget(self.manifest)  # it deletes vectors: the next sync reconciles
            files = self.manifest.files(plan.path)
            ids = list(dict.fromkeys([*plan.chunk_ids,
                                      *self.manifest.chunk_ids_for_sources(files)]))
            hashes = set(plan.hashes) | self.manifest.content_hashes(ids)
            with self.manifest.transaction():
                self.manifest.delete_chunks(ids)
                self.manifest.keywords.delete(ids)
                for file_path in files:
                    self.manifest.delete_file(file_path)
                self.manifest.delete_folder(plan.path)
            # After the commit: a crash here leaves orphan vectors, deleted when the removal's
            # intent is finished (or by the next sync's reconcile).
            for store in self._stores_to_clean():
                store.delete(ids)
                if ids:
                    store.compact()  # Chroma keeps deleted vectors' bytes until rewritten
            self.manifest.purge()  # the removed text must not stay readable in the file
            self._refresh_snapshot()
            unused = hashes - self.manifest.hashes_in_use(hashes)
        return FolderRemoved(plan.path, plan.files, len(plan.chunk_ids), frozenset(unused))

    def _stores_to_clean(self) -> list[VectorStore]:
        stores: list[VectorStore] = []
        recorded = self._recorded_store()
        if recorded is not None:
            stores.append(recorded)
        if self.embedder is not None:
            e = self.embedder
            name = collection_name(e.model_id, e.dimension)
            if name != self.manifest.get_meta(META_COLLECTION):
                stores.append(self._open_store(name, e.model_id, e.dimension))
        return stores

    # --- sync -------------------------------------------------------------------------------

    def sync(
        self,
        settings: SyncSettings,
        *,
        folders: Sequence[str | os.PathLike[str]] | None = None,
        rebuild: bool = False,
        progress: ProgressCallback | None = None,
    ) -> SyncReport:
        """Bring the index in line with the registered folders (or the given ones).

        `rebuild` forgets everything indexed and re-reads all folders; embeddings come from the
        cache, so a warm rebuild makes no model calls, and vectors whose chunk id is derived
        again are kept in place. `progress` may raise (e.g. a cancel from the UI) to stop the
        sync between batches; what was committed stays consistent and the next sync goes on.
        """
        embedder = self._require_embedder()
        started = time.perf_counter()
        self._coverage = None
        try:
            return self._sync(embedder, settings, folders, rebuild, progress, started)
        finally:
            self._coverage = None  # counted again on the next search

    def _sync(
        self,
        embedder: Embedder,
        settings: SyncSettings,
        folders: Sequence[str | os.PathLike[str]] | None,
        rebuild: bool,
        progress: ProgressCallback | None,
        started: float,
    ) -> SyncReport:
        # Lazy: it loads chunking and sync (see the imports above).
        from indexing.knowledge_sync import KnowledgeSync, select_folders

        with self.lock:
            registered = [f.path for f in self.manifest.folders()]
            selected = (
                registered if folders is None or rebuild else select_folders(folders, registered)
            )
            current = collection_name(embedder.model_id, embedder.dimension)
            recorded = self.manifest.get_meta(META_COLLECTION)
            reembed = recorded is not None and recorded != current
            # Nothing wrote to the store since the last complete sync left it matching the
            # manifest: no reconcile, and Chroma is opened only if a file changed.
            skip_vectors = not rebuild and recorded == current and vectors_match.matches(
                self.manifest, current, self.vector_location)
            if not skip_vectors:
                vectors_match.forget(self.manifest)  # committed before any write to the store
            run = KnowledgeSync(self.manifest, embedder, settings, progress, self._snapshots,
                                self._open_store, self._recorded_store, self._serve)
            if rebuild:
                old = (self.manifest.get_meta(META_MODEL), self.manifest.get_meta(META_DIMENSION))
                syncer = run.rebuild(registered, current, recorded, old)
            else:
                syncer = run.sync_in(selected, registered, current, recorded, skip_vectors)
            self._refresh_snapshot()
            vectors_match.record(self.manifest, current, self.vector_location)
            return syncer.report(selected, started, reembedded=reembed, rebuilt=rebuild)

    def _serve(self, store: VectorStore | None) -> None:
        """The store dense search reads from now on (None: opened again when needed)."""
        self._vectors = store

    # --- reads for retrieval ----------------------------------------------------------------

    @property
    def searches_without_store(self) -> bool:
        """Dense search can be answered from the snapshot file (no Chroma import needed)."""
        return self._snapshots.fresh() is not None

    def _refresh_snapshot(self) -> None:
        if self.reembed_needed:
            return  # dense search reads no collection yet
        # Rewritten when a change cleared its token, or once when a trim is due and the file
        # is from before content hashes (schema step 3).
        if not self.manifest.get_meta(SNAPSHOT_META) or (
            self.manifest.get_meta(CACHE_TRIM_META) and not self._snapshots.has_content()
        ):
            self._snapshots.refresh(self._recorded_store)
        forget = getattr(self.embedder, "forget_cached", None)
        if callable(forget):
            self._snapshots.trim_cache(forget)

    def dense_search(
        self, query_embedding: Sequence[float] | np.ndarray, k: int, *,
        sources: Collection[str] | None = None,
    ) -> list[tuple[str, float]]:
        """Nearest chunks by cosine similarity, optionally only from `sources`."""
        if self.reembed_needed:
            assert self.embedder is not None
            raise ReembedNeeded(self.indexed_model or "?", self.embedder.model_id)
        if sources is not None and not sources:
            return []
        snapshot = self._snapshots.fresh()
        if snapshot is not None:
            allowed = (self.manifest.chunk_ids_for_sources(sources)
                       if sources is not None else None)
            return snapshot.search(np.asarray(query_embedding), k, allowed=allowed)
        if self.vectors() is None or k <= 0:
            return []
        where: dict[str, object] | None = (
            {"source": {"$in": sorted(sources)}} if sources is not None else None)
        try:
            return self._query(query_embedding, k, where)
        except VectorStoreError:
            # Another KnowledgeBase (the TUI's watcher, a `--rebuild` elsewhere) may have
            # dropped and recreated the collection under our cached handle: reopen once.
            # (Opening and querying say every Chroma failure so: chroma_clients.guard.)
            self._vectors = None
            self._coverage = None
            if self.vectors() is None:
                return []
            return self._query(query_embedding, k, where)

    def _query(
        self, query_embedding: Sequence[float] | np.ndarray, k: int,
        where: dict[str, object] | None
    ) -> list[tuple[str, float]]:
        store = self.vectors()
        assert store is not None
        return store.query(query_embedding, k, where=where)

    def keyword_search(
        self, query: str, k: int, *, sources: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over the chunks (higher is better), optionally only from `sources`."""
        ids: list[str] | None = None
        if sources is not None:
            ids = self.manifest.chunk_ids_for_sources(sources)
            if not ids:
                return []
        if k <= 0:
            return []
        with self.manifest.lock:
            return self.manifest.keywords.search(query, k, ids=ids)

    def get_chunks(self, ids: Iterable[str]) -> dict[str, Chunk]:
        return self.manifest.get_chunks(ids)

    def chunk_places(self, ids: Iterable[str]) -> dict[str, ChunkPlace]:
        return self.manifest.chunk_places(ids)

    def chunk_terms(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The keyword tokens indexed for these chunks (`indexing.tokenize` of their text)."""
        with self.manifest.lock:
            return self.manifest.keywords.stored_tokens(ids)

    def sources_under(self, path_or_glob: str) -> list[str]:
        """Indexed files under a folder/file path, or matching a glob.

        A glob without "/" matches file names (`*.md`); one with "/" matches whole paths,
        relative ones from the current directory (`notes/**/*.md`, `~/docs/*`).
        """
        pattern = os.path.expanduser(path_or_glob.strip())
        paths = self.manifest.source_paths()
        if any(ch in GLOB_CHARS for ch in pattern):
            if "/" not in pattern:
                return [p for p in paths if fnmatch.fnmatchcase(os.path.basename(p), pattern)]
            if not os.path.isabs(pattern):
                pattern = os.path.join(os.getcwd(), pattern)
            pattern = os.path.normpath(pattern)
            return [p for p in paths if fnmatch.fnmatchcase(p, pattern)]
        bases = {os.path.abspath(pattern), os.path.realpath(pattern)}
        return [p for p in paths if p in bases or any(inside(p, b) for b in bases)]

    def sources_modified(self, since: float | None, until: float | None) -> list[str]:
        """Indexed files last modified in [since, until) (Unix seconds; None = open end)."""
        return self.manifest.paths_modified(since, until)

    def stats(self) -> tuple[int, int]:
        """(files, chunks) indexed."""
        return self.manifest.totals()

    def chunk_ids(self) -> set[str]:
        return self.manifest.chunk_ids()
