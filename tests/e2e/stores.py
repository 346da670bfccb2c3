"""Read what a home's stores hold, to compare a crashed-and-recovered home with a clean one.

Everything is read from the files a `brain` process leaves behind: the SQLite databases directly
and the Chroma collections through `indexing.vectors` (in this process, read-only use).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from assistant.paths import resolve_paths
from indexing.knowledge_types import META_COLLECTION, META_DIMENSION, META_MODEL

MEMORY_COLLECTION = "memories"


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _forget_clients() -> None:
    """Drop cached Chroma clients: a `brain` process may have replaced the store on disk
    (--rebuild, a moved-aside directory) since this process last opened it."""
    from chromadb.api.shared_system_client import SharedSystemClient

    from indexing.chroma_clients import close_all

    close_all()
    SharedSystemClient.clear_system_cache()


def _collection_ids(home: Path, collection: str, model: str, dimension: int) -> list[str]:
    from indexing.vectors import VectorStore

    _forget_clients()
    try:
        store = VectorStore.open(str(resolve_paths(home).vectors_dir), collection,
                                 model_id=model, dimension=dimension)
        return sorted(store.ids())
    finally:
        _forget_clients()


def knowledge_state(home: Path) -> dict[str, Any]:
    """Chunk ids and content per file, the FTS rows and the vector ids of the knowledge index."""
    db = resolve_paths(home).knowledge_db
    meta = dict(_rows(db, "SELECT key, value FROM meta"))
    chunks = _rows(db, "SELECT id, source, text FROM chunks ORDER BY id")
    ids = [c[0] for c in chunks]
    return {
        "chunks": ids,
        "content": sorted((source, text) for _, source, text in chunks),
        "files": sorted(r[0] for r in _rows(db, "SELECT path FROM files")),
        "fts_rows": _rows(db, "SELECT count(*) FROM chunk_fts")[0][0],
        "vectors": _collection_ids(home, meta[META_COLLECTION], meta[META_MODEL],
                                   int(meta[META_DIMENSION])),
    }


def memory_rows(home: Path) -> list[dict[str, Any]]:
    db = resolve_paths(home).memory_db
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM memories ORDER BY rowid")]
    finally:
        conn.close()


def memory_state(home: Path, *, model: str, dimension: int) -> dict[str, Any]:
    """Active memories as a multiset of (type, key, text), their vectors, and duplicates."""
    rows = memory_rows(home)
    active = [r for r in rows if r["status"] == "active"]
    ids = sorted(r["id"] for r in active)
    vectors = _collection_ids(home, MEMORY_COLLECTION, model, dimension) if rows else []
    identity = Counter((r["type"], r["key"], r["text"]) for r in active)
    return {
        "memories": sorted(identity.items(), key=repr),
        "count": len(active),
        "duplicates": sorted((k for k, n in identity.items() if n > 1), key=repr),
        "vectors_missing": sorted(set(ids) - set(vectors)),
        "vectors_orphaned": sorted(set(vectors) - {r["id"] for r in rows}),
    }


def dump(state: dict[str, Any]) -> str:
    return json.dumps(state, indent=1, ensure_ascii=False, default=str)[:3000]


def conversation_vector_ids(home: Path, *, model: str, dimension: int) -> list[str]:
    """The ids in the conversation index's Chroma collection for this embedding model."""
    from assistant.conversations.service import collection_name

    return _collection_ids(home, collection_name(model, dimension), model, dimension)
