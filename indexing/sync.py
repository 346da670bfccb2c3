"""One sync: diff the manifest against the disk and apply the difference to both stores.

Crash safety (SIGKILL at any point converges on the next sync) comes from the write order and one
repair step, both those of every derived index (`indexing/derived_index.py`):
1. vectors are upserted into Chroma first;
2. then the file's manifest rows, chunk rows and keyword rows commit in ONE SQLite transaction;
3. only after that commit are the file's obsolete vectors deleted from Chroma.
So at any instant SQLite (manifest + chunks + FTS, always mutually consistent) is the truth and
Chroma may only hold extra vectors or, after an interrupted repair, miss some. A reconcile runs at
the start of every sync: vectors whose id is not in the manifest are deleted and manifest chunks
missing from Chroma are re-upserted (their embeddings come from the dense snapshot by content or
the embedding cache, so this costs no model call). The same step re-embeds everything into a
fresh collection after a model change. A rebuild (`Syncer.rebuild`, the core's `rebuild`)
rewrites SQLite first and reconciles after it.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from indexing.chunking import ChunkSettings, chunk_file, content_hash
from indexing.content_time import content_time, copied_together
from indexing.derived_index import DerivedIndex, Rows, VectorDoc
from indexing.errors import log_failure
from indexing.lazy import Lazy
from indexing.manifest import FileRecord, Manifest
from indexing.progress import Phase, ProgressCallback, SyncProgress
from indexing.readers import SkipFile, read_file
from indexing.sources import Skipped, SourceFile, SourceSettings, walk
from indexing.types import Chunk

if TYPE_CHECKING:
    from indexing.embedder import Embedder
    from indexing.vectors import VectorStore

log = logging.getLogger(__name__)

# Texts per embed → upsert → commit round: big enough for efficient model batches (sorted by
# length, see `_by_length`), small enough that a crash loses little work and progress moves.
DEFAULT_BATCH_CHUNKS = 512
# Files per SQLite transaction when they need no embedding (e.g. a `touch` of many files).
MAX_BATCH_FILES = 200


@dataclass(frozen=True, slots=True)
class SyncSettings:
    sources: SourceSettings = field(default_factory=SourceSettings)
    chunking: ChunkSettings = field(default_factory=ChunkSettings)
    batch_chunks: int = DEFAULT_BATCH_CHUNKS


@dataclass(frozen=True, slots=True)
class SyncReport:
    folders: tuple[str, ...]
    added: tuple[str, ...]  # new files indexed
    updated: tuple[str, ...]  # files whose content changed
    removed: tuple[str, ...]  # files deleted, now ignored or now skipped
    unchanged: int
    skipped: Mapping[str, tuple[tuple[str, str], ...]]  # reason → ((path, detail), …)
    chunks_added: int
    chunks_removed: int
    embedded: int  # texts the model actually embedded (embedding-cache misses)
    cache_hits: int  # texts whose embedding came from the cache or, by content, the snapshot
    repaired: int  # vectors fixed by the start-of-sync reconcile (orphans + missing)
    reembedded: bool  # the whole index moved to a new embedding model
    rebuilt: bool
    missing_folders: tuple[str, ...]  # registered folders not on disk: left untouched
    seconds: float
    reused: int = 0  # chunks whose stored vector was kept (a rebuild): neither model nor cache
    absorbed: tuple[tuple[str, str], ...] = ()  # (folder, the parent it is now part of)

    @property
    def skipped_count(self) -> int:
        return sum(len(v) for v in self.skipped.values())

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.repaired)

    def summary(self) -> str:
        parts = [
            f"{len(self.added)} added",
            f"{len(self.updated)} updated",
            f"{len(self.removed)} removed",
            f"{self.unchanged} unchanged",
        ]
        if self.skipped:
            reasons = ", ".join(f"{len(v)} {k}" for k, v in sorted(self.skipped.items()))
            parts.append(f"{self.skipped_count} skipped ({reasons})")
        text = (
            ", ".join(parts)
            + f"; chunks +{self.chunks_added} -{self.chunks_removed}"
            + f"; embedded {self.embedded}, cache hits {self.cache_hits}"
            + (f", vectors kept {self.reused}" if self.reused else "")
            + f"; {self.seconds:.1f}s"
        )
        if self.repaired:
            text += f"; repaired {self.repaired} vectors"
        return text


# Content hash -> vector for those of the given hashes some store already holds (the dense
# snapshot, `SnapshotKeeper.by_content`): taken before the embedder is asked.
KnownVectors = Callable[[Sequence[str]], Mapping[str, np.ndarray]]


class _Counters:
    """Embedding work as the embedder counts it (CachedEmbedder has hits/misses), plus the
    vectors found by content in `known`."""

    def __init__(self, embedder: Embedder, known: KnownVectors | None = None) -> None:
        self.embedder = embedder
        self.known = known
        self.start_hits = int(getattr(embedder, "hits", 0))
        self.start_misses = int(getattr(embedder, "misses", 0))
        self.texts = 0
        self.known_hits = 0

    def embed(self, texts: Sequence[str]) -> Any:
        texts = list(texts)
        if self.known is None or not texts:
            self.texts += len(texts)
            return self.embedder.embed_documents(texts)
        keys = [content_hash(t) for t in texts]
        found = self.known(keys)
        rest = [t for t, key in zip(texts, keys, strict=True) if key not in found]
        self.known_hits += len(texts) - len(rest)
        self.texts += len(rest)
        if not found:
            return self.embedder.embed_documents(texts)
        fresh = iter(self.embedder.embed_documents(rest) if rest else ())
        return np.stack([np.asarray(found[key], dtype=np.float32) if key in found
                         else next(fresh) for key in keys])

    @property
    def hits(self) -> int:
        return int(getattr(self.embedder, "hits", 0)) - self.start_hits + self.known_hits

    @property
    def embedded(self) -> int:
        if hasattr(self.embedder, "misses"):
            return int(self.embedder.misses) - self.start_misses
        return self.texts  # an uncached embedder embeds everything it is given


def _metadata(chunk_source: str) -> dict[str, str]:
    # Only what Chroma needs to filter (`--in PATH`); everything else lives in SQLite.
    return {"source": chunk_source}


def _vector_doc(chunk: Chunk) -> VectorDoc:
    return VectorDoc(chunk.id, chunk.text, _metadata(chunk.source))


def manifest_rows(manifest: Manifest) -> Rows:
    """The manifest's chunks as the rows the vector store is derived from."""

    def docs(ids: Sequence[str]) -> list[VectorDoc]:
        rows = manifest.chunk_texts(ids)
        # a chunk deleted meanwhile needs no vector
        return [VectorDoc(i, rows[i][0], _metadata(rows[i][1])) for i in ids if i in rows]

    def by_length(ids: list[str]) -> list[str]:
        lengths = manifest.chunk_lengths(ids)
        return sorted(ids, key=lambda i: lengths.get(i, 0))  # similar lengths per model batch

    return Rows(ids=manifest.chunk_ids, docs=docs, order=by_length)


@dataclass(slots=True)
class _Update:
    kind: str  # "added" | "updated" | "touched" | "removed"
    path: str
    record: FileRecord | None  # None when removed
    chunks: list[Chunk]  # the file's chunks now (empty when removed/touched)
    new_chunks: list[Chunk]  # chunks whose id is not indexed yet: embed + upsert + FTS
    stale_ids: list[str]  # chunk ids to delete


@dataclass(slots=True)
class _FolderScan:
    folder: str = ""
    absorbs: tuple[str, ...] = ()  # registered folders inside it, absorbed once it succeeds
    to_read: list[tuple[SourceFile, FileRecord | None]] = field(default_factory=list)
    gone: list[FileRecord] = field(default_factory=list)
    unchanged: int = 0


class Syncer:
    """Applies one sync to a manifest + vector store pair; the caller holds the index lock."""

    def __init__(
        self,
        manifest: Manifest,
        vectors: VectorStore | Callable[[], VectorStore],
        embedder: Embedder,
        settings: SyncSettings,
        progress: ProgressCallback | None = None,
        *,
        rechunk: bool = False,
        before_vector_write: Callable[[], None] | None = None,
        known: KnownVectors | None = None,
    ) -> None:
        self.manifest = manifest
        # Chunk settings changed: every file is re-chunked even if its bytes did not change
        # (identical chunks keep their ids; new texts mostly hit the embedding cache).
        self.rechunk = rechunk
        # Chunk ids whose vectors are known to be in the store already (set by `rebuild`).
        self.reusable: set[str] = set()
        # A callable opens the store on first use: a sync that changes nothing never imports
        # Chroma (seconds of a re-sync; issue 25). `before_vector_write` runs once, before
        # the first write to the store (the caller records that the store may now differ).
        if callable(vectors):
            self._vectors: Lazy[VectorStore] = Lazy(vectors)
        else:
            store = vectors
            self._vectors = Lazy(lambda: store)
            self._vectors.get()  # given open: `opened_vectors` names it
        self._before_write = before_vector_write
        self.embedder = embedder
        self.settings = settings
        self.progress = progress
        # Vectors some store holds by content are taken from it, not the model or the cache.
        self.counters = _Counters(embedder, known)
        # The vector store derived from the manifest: written first, repaired by reconcile.
        self.derived = DerivedIndex(self._writing_vectors, self.counters.embed,
                                    batch=settings.batch_chunks, progress=progress)
        self.skipped: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.added: list[str] = []
        self.updated: list[str] = []
        self.removed: list[str] = []
        self.unchanged = 0
        self.chunks_added = 0
        self.chunks_removed = 0
        self.reused = 0
        self.repaired = 0
        self.missing_folders: list[str] = []
        self.absorbed: list[tuple[str, str]] = []  # (registered folder, parent absorbing it)
        self._files_done = 0
        self._files_total = 0
        self._embedded = 0  # chunks embedded by this sync so far (progress)
        self._to_embed = 0  # chunks queued for embedding so far (progress)
        self._copied: set[str] = set()  # new files of this sync that came in a bulk copy

    @property
    def vectors(self) -> VectorStore:
        return self._vectors.get()

    @property
    def opened_vectors(self) -> VectorStore | None:
        """The store if this sync opened it (None: it never needed to)."""
        return self._vectors.peek()

    def _writing_vectors(self) -> VectorStore:
        if self._before_write is not None:
            before, self._before_write = self._before_write, None
            before()
        return self.vectors

    def _emit(self, phase: Phase, path: str = "") -> None:
        if self.progress:
            embedding = phase == Phase.embedding
            self.progress(
                SyncProgress(
                    phase,
                    files_done=self._files_done,
                    files_total=self._files_total,
                    chunks_done=self._embedded if embedding else self.chunks_added,
                    chunks_total=self._to_embed if embedding else 0,
                    path=path,
                )
            )

    # --- steps ------------------------------------------------------------------------------

    def repair(self, *, vectors: bool = True) -> None:
        """Re-tokenise a stale keyword index; with `vectors`, reconcile the vector store with
        the manifest (the caller leaves it out only when it knows they match)."""
        self._emit(Phase.repairing)
        keywords = self.manifest.keywords
        if keywords.stale:
            # The tokenizer changed since these rows were written: re-tokenise every chunk.
            with self.manifest.transaction():
                keywords.clear()
                keywords.add(self.manifest.iter_chunk_texts())
        if not vectors:
            return
        self.repaired += self.derived.reconcile(manifest_rows(self.manifest)).fixed

    def rebuild(self, rewrite: Callable[[], None], present: set[str]) -> None:
        """The derived-index core's rebuild: `rewrite` re-derives the manifest from the files
        (with this syncer's `sync_folders`), keeping the vector of every chunk whose id is in
        `present` (the store's ids: no embedding, no upsert); then the store is reconciled
        with the new manifest (orphans deleted, missing vectors embedded)."""

        def rows(kept: set[str]) -> None:
            self.reusable = kept
            rewrite()
            self._emit(Phase.repairing)

        _, fixed = self.derived.rebuild(manifest_rows(self.manifest), rows, present=present)
        self.repaired += fixed.fixed

    def sync_folders(self, folders: Sequence[str]) -> None:
        scans: list[_FolderScan] = []
        nested = _nested(folders, [f.path for f in self.manifest.folders()])
        for folder in folders:
            self._emit(Phase.scanning, folder)
            if not Path(folder).is_dir():
                # An unmounted drive or a renamed folder: keep its chunks until the user
                # removes it (`brain folders rm`), rather than silently wiping them.
                self.missing_folders.append(folder)
                continue
            if any(folder in nested.get(p, ()) for p in folders if Path(p).is_dir()):
                continue  # a parent being synced covers it (and absorbs it at the end)
            scans.append(self._scan(folder, nested.get(folder, ())))
        self._files_total = sum(len(s.to_read) for s in scans)
        self._copied = copied_together({str(source.path): source.mtime for scan in scans
                                        for source, known in scan.to_read if known is None})
        self.unchanged += sum(s.unchanged for s in scans)
        self._emit(Phase.indexing)
        pending: list[_Update] = []
        pending_chunks = 0
        for scan in scans:
            for record in scan.gone:
                pending.append(self._removal(record))
            for source, known in scan.to_read:
                update = self._read(source, known)
                self._files_done += 1
                self._emit(Phase.indexing, str(source.path))  # per file: moves at once
                if update is None:
                    continue
                pending.append(update)
                pending_chunks += len(update.new_chunks)
                if (
                    pending_chunks >= self.settings.batch_chunks
                    or len(pending) >= MAX_BATCH_FILES
                ):
                    self._flush(pending)
                    pending, pending_chunks = [], 0
        self._flush(pending)
        now = self.manifest.clock()
        with self.manifest.transaction():
            for folder in folders:
                if folder not in self.missing_folders:
                    self.manifest.set_last_sync(folder, now)
            # Only now that the parent's sync succeeded do the registered folders inside it
            # give up their registration (their files and chunks are re-homed, not re-read).
            for scan in scans:
                for child in scan.absorbs:
                    self.manifest.move_files(child, scan.folder)
                    self.manifest.delete_folder(child)
                    self.absorbed.append((child, scan.folder))
        self._files_done = self._files_total
        self._emit(Phase.done)

    def report(
        self, folders: Sequence[str], started: float, *, reembedded: bool, rebuilt: bool
    ) -> SyncReport:
        return SyncReport(
            folders=tuple(folders),
            added=tuple(self.added),
            updated=tuple(self.updated),
            removed=tuple(self.removed),
            unchanged=self.unchanged,
            skipped={k: tuple(v) for k, v in sorted(self.skipped.items())},
            chunks_added=self.chunks_added,
            chunks_removed=self.chunks_removed,
            embedded=self.counters.embedded,
            cache_hits=self.counters.hits,
            repaired=self.repaired,
            reembedded=reembedded,
            rebuilt=rebuilt,
            missing_folders=tuple(self.missing_folders),
            seconds=time.perf_counter() - started,
            reused=self.reused,
            absorbed=tuple(self.absorbed),
        )

    # --- internals --------------------------------------------------------------------------

    def _scan(self, folder: str, absorbs: Sequence[str] = ()) -> _FolderScan:
        known = self.manifest.files(folder)
        for child in absorbs:  # already indexed: unchanged files need no reading
            known.update(self.manifest.files(child))
        scan = _FolderScan(folder=folder, absorbs=tuple(absorbs))
        seen: set[str] = set()
        for item in walk(Path(folder), self.settings.sources):
            path = str(item.path)
            if isinstance(item, Skipped):
                self.skipped[str(item.reason)].append((path, item.detail))
                continue
            seen.add(path)
            record = known.get(path)
            if (
                not self.rechunk
                and record is not None
                and record.size == item.size
                and record.mtime == item.mtime
            ):
                scan.unchanged += 1
            else:
                scan.to_read.append((item, record))
        # Deleted, now ignored, or now skipped (too large, unreadable…): their chunks go.
        scan.gone = [r for p, r in sorted(known.items()) if p not in seen]
        return scan

    def _read(self, source: SourceFile, record: FileRecord | None) -> _Update | None:
        path = str(source.path)
        try:
            decoded = read_file(
                source.path, max_bytes=self.settings.sources.max_file_bytes, inside=source.root
            )
            digest = content_hash(decoded.text)
            if not self.rechunk and record is not None and digest == record.content_hash:
                # Touched but not changed: no chunking, no vectors; just the new stat.
                return _Update(
                    "touched", path, _replace_stat(record, source), [], [], []
                )
            known = None if record is None else self.manifest.content_time(path)
            # Chunks carry the content time (content_time.py), the file record the stat.
            dated = replace(source, mtime=content_time(
                source.mtime, changed=record is None or digest != record.content_hash,
                known=known, copied=path in self._copied))
            chunks = chunk_file(dated, decoded, self.settings.chunking)
        except SkipFile as exc:
            self.skipped[str(exc.reason)].append((path, exc.detail))
            return self._removal(record) if record is not None else None
        except Exception as exc:  # one bad file must never stop a sync of thousands
            # The report lists it; a reader's bug also leaves its traceback (an OSError is a
            # file vanished or unreadable: its words are enough).
            log_failure(log, f"indexing {path} failed", exc, level=logging.INFO,
                        foreseen=(OSError,))
            self.skipped["error"].append((path, f"{type(exc).__name__}: {exc}"))
            return self._removal(record) if record is not None else None
        chunks = list({c.id: c for c in chunks}.values())  # ids are unique per file
        old_ids = set(record.chunk_ids) if record is not None else set()
        new_ids = {c.id for c in chunks}
        new_record = FileRecord(
            path=path,
            # A file of a folder not absorbed yet stays that folder's until the parent succeeds.
            folder=record.folder if record is not None else str(source.root),
            size=source.size,
            mtime=source.mtime,
            content_hash=digest,
            chunk_ids=tuple(c.id for c in chunks),
            model_id=self.embedder.model_id,
            indexed_at=self.manifest.clock(),
        )
        kind = "added" if record is None else "updated"
        if record is not None and digest == record.content_hash and old_ids == new_ids:
            kind = "touched"  # re-chunked to the very same chunks
        return _Update(
            kind,
            path,
            new_record,
            chunks,
            [c for c in chunks if c.id not in old_ids],
            sorted(old_ids - new_ids),
        )

    def _removal(self, record: FileRecord) -> _Update:
        return _Update("removed", record.path, None, [], [], list(record.chunk_ids))

    def _flush(self, pending: list[_Update]) -> None:
        if not pending:
            return
        new_chunks = [c for u in pending for c in u.new_chunks]
        to_upsert = _by_length([c for c in new_chunks if c.id not in self.reusable])
        self.reused += len(new_chunks) - len(to_upsert)
        self._to_embed += len(to_upsert)
        # Vectors first (the core's write order), then manifest + chunks + keywords
        # atomically, and obsolete vectors only after that commit.
        stale = self.derived.write([_vector_doc(c) for c in to_upsert],
                                   lambda: self._commit(pending), self._embedding)
        self.derived.forget(stale)
        for update in pending:
            if update.kind == "added":
                self.added.append(update.path)
            elif update.kind == "updated":
                self.updated.append(update.path)
            elif update.kind == "removed":
                self.removed.append(update.path)
            else:
                self.unchanged += 1
        self.chunks_added += len(new_chunks)
        self.chunks_removed += len(stale)

    def _embedding(self, first: VectorDoc, texts: int) -> None:
        self._embedded += texts
        self._emit(Phase.embedding, str(first.metadata["source"]))

    def _commit(self, pending: list[_Update]) -> list[str]:
        """The batch's manifest, chunk and keyword rows in one transaction; the chunk ids it
        dropped (their vectors go after the commit)."""
        keywords = self.manifest.keywords
        stale: list[str] = []
        with self.manifest.transaction():
            for update in pending:
                if update.kind == "removed":
                    ids = sorted(
                        set(update.stale_ids)
                        | set(self.manifest.chunk_ids_for_sources([update.path]))
                    )
                    self.manifest.delete_chunks(ids)
                    keywords.delete(ids)
                    self.manifest.delete_file(update.path)
                    stale.extend(ids)
                    continue
                assert update.record is not None
                # Touched (same content): the chunks keep their content time.
                if update.kind != "touched":
                    if update.stale_ids:
                        self.manifest.delete_chunks(update.stale_ids)
                        keywords.delete(update.stale_ids)
                        stale.extend(update.stale_ids)
                    self.manifest.put_chunks(update.chunks)
                    if update.new_chunks:
                        keywords.add((c.id, c.text) for c in update.new_chunks)
                self.manifest.put_file(update.record)
        return stale


def _by_length(chunks: list[Chunk]) -> list[Chunk]:
    # Model batches pad every text to the longest one in the batch: texts of similar length
    # together waste far less compute (the order of upserts does not matter).
    return sorted(chunks, key=lambda c: len(c.text))


def _nested(folders: Sequence[str], registered: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """folder → the registered folders inside it (a parent added but not yet synced)."""
    def inside(child: str, parent: str) -> bool:
        return child != parent and child.startswith(parent.rstrip("/") + "/")

    found = {f: tuple(r for r in registered if inside(r, f)) for f in folders}
    return {f: kids for f, kids in found.items() if kids}


def _replace_stat(record: FileRecord, source: SourceFile) -> FileRecord:
    return FileRecord(
        path=record.path,
        folder=record.folder,
        size=source.size,
        mtime=source.mtime,
        content_hash=record.content_hash,
        chunk_ids=record.chunk_ids,
        model_id=record.model_id,
        indexed_at=record.indexed_at,
    )


ReportCallback = Callable[[SyncReport], None]
