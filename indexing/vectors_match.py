"""A record that the vector store holds exactly the manifest's chunk ids, so a sync that finds
nothing changed can skip Chroma (issue 25).

An unchanged re-sync spent most of its time importing chromadb, opening its client and listing
every vector id for the reconcile (28 s of a 36 s re-sync of 31k chunks under load). The
manifest's meta `vectors_match` says "after the last complete sync, collection C matched the
manifest, and nothing has written to it since". It is written at the end of a sync that
finished; it is deleted, committed on its own, before anything writes to the store (the intent:
a kill after that leaves no record, so the next sync reconciles as before). It names Chroma's
database file by inode, size and mtime: a store moved aside, replaced or written by anything else
(the memory and conversation collections share the file) no longer matches the record, so the
documented recovery (move the store aside, sync) still re-fills it. Only a local store has a
record; a Chroma server is reconciled on every sync.
"""

from __future__ import annotations

import os
from pathlib import Path

from indexing.manifest import Manifest

META_KEY = "vectors_match"
_DATABASE = "chroma.sqlite3"


def _stamp(location: str | os.PathLike[str]) -> str | None:
    if str(location).startswith(("http://", "https://")):
        return None
    try:
        st = (Path(location) / _DATABASE).stat()
    except OSError:
        return None
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def matches(manifest: Manifest, collection: str, location: str | os.PathLike[str]) -> bool:
    """True when `collection` at `location` is recorded as matching the manifest and the store
    is the very file the record names."""
    stamp = _stamp(location)
    return stamp is not None and manifest.get_meta(META_KEY) == f"{collection} {stamp}"


def forget(manifest: Manifest) -> None:
    """Before a write to the store: delete the record, committed (outside any transaction)."""
    if manifest.get_meta(META_KEY) is not None:
        with manifest.transaction():
            manifest.set_meta(META_KEY, None)


def record(manifest: Manifest, collection: str, location: str | os.PathLike[str]) -> None:
    """After a sync that finished every write: `collection` matches the manifest."""
    stamp = _stamp(location)
    with manifest.transaction():
        manifest.set_meta(META_KEY, f"{collection} {stamp}" if stamp is not None else None)
