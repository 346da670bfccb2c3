"""What can go wrong with the vector store, said for the user: the errors, and telling a damaged
embedded store from any other failure (only verified damage gets the advice to move the store
aside, which throws every vector away). No chromadb import: `check_store_file` reads Chroma's
SQLite file itself, so the doctor and the dense snapshot can check a store without loading it.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from indexing.errors import HintedError


class VectorStoreError(HintedError):
    """The vector store cannot be used; the message (and hint) are meant for the user."""


class VectorStoreDamaged(VectorStoreError):
    """The embedded store's database is damaged: it can only be rebuilt (see `recovery_hint`)."""


class VectorStoreReadOnly(VectorStoreError):
    """The embedded store is in a folder this process cannot write (a read-only mount): the
    embedded Chroma cannot open it at all, so searches go on by keywords and say so."""


def recovery_hint(directory: str | Path) -> str:
    return (f"move {directory} aside, then run `brain index --rebuild`, `brain memory "
            "reindex` and `brain sessions reindex`: your files, memories and chats are "
            "untouched and embeddings come back from the cache")


# An error that does not say damage (a bad request, a full disk, a lock) must not advise moving
# the store aside: that throws away every vector. Only a verified damage gets that advice.
NOT_DAMAGE_HINT = "`brain doctor` checks whether the store is damaged and says what to do"


def damaged(directory: str | Path, detail: object) -> VectorStoreDamaged:
    db = Path(directory) / "chroma.sqlite3"
    return VectorStoreDamaged(
        f"The vector store cannot be used: {db} is damaged ({_short(detail)}).",
        hint=recovery_hint(directory))


def _short(detail: object) -> str:
    """One short line: SQLite quotes the whole undecodable text, Rust the whole panic."""
    text = str(detail).strip()
    column = re.search(r"decode to UTF-8 column '([^']+)'", text)
    if column:
        return f"text that is not UTF-8 in its {column.group(1)!r} column"
    first = (text.splitlines() or [""])[0]
    return first if len(first) <= 120 else first[:117] + "…"


def is_panic(exc: BaseException) -> bool:
    """A Rust panic inside Chroma (pyo3's PanicException derives from BaseException, so an
    `except Exception` does not see it)."""
    return type(exc).__name__ == "PanicException"


DAMAGE_WORDS = re.compile(r"malformed|not a database|disk image|database corrupt", re.IGNORECASE)
# Chroma's catalog: small tables it decodes while starting. A damaged page or a byte that is
# not UTF-8 in one of them makes the Rust side panic — sometimes in a thread that cannot unwind,
# which aborts the whole process — so they are read here first, in Python, where damage is an
# ordinary exception.
_CATALOG = ("collections", "collection_metadata", "segments", "segment_metadata", "tenants",
            "databases", "embeddings_queue_config", "max_seq_id", "migrations")


def check_store_file(directory: str | Path) -> None:
    """Raise VectorStoreDamaged if the embedded store's database is visibly damaged (empty,
    not SQLite, a damaged schema or catalog); a few milliseconds, whatever the store's size."""
    db = Path(directory) / "chroma.sqlite3"
    try:
        with db.open("rb") as handle:
            header = handle.read(16)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise VectorStoreError(f"Cannot read the vector store file {db} ({exc.strerror}).",
                               hint="check the permissions of the data directory") from exc
    if not header:
        raise damaged(directory, "the file is empty")
    if header != b"SQLite format 3\x00":
        raise damaged(directory, "not a SQLite database")
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    try:
        tables = {str(name) for name, _sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table'")}
        for table in _CATALOG:
            if table in tables:
                conn.execute(f'SELECT * FROM "{table}"').fetchall()
    except UnicodeDecodeError as exc:
        raise damaged(directory, f"text that is not UTF-8: {exc.reason}") from exc
    except sqlite3.OperationalError as exc:
        if DAMAGE_WORDS.search(str(exc)) or "decode" in str(exc).lower():
            raise damaged(directory, exc) from exc
        # Locked by another process, or similar: not damage; Chroma will wait or say so.
    except sqlite3.DatabaseError as exc:
        raise damaged(directory, exc) from exc
    finally:
        conn.close()


class EmbeddingModelMismatch(VectorStoreError):
    """The collection holds vectors of another embedding model (or dimension)."""

    def __init__(
        self,
        collection: str,
        *,
        stored_model: str | None,
        stored_dimension: int | None,
        model_id: str,
        dimension: int,
    ) -> None:
        stored = (
            f"{stored_model} ({stored_dimension}-d)"
            if stored_model
            else "another program (no model recorded)"
        )
        super().__init__(
            f"The {collection!r} vectors were built with {stored}, but the configured embedding "
            f"model is {model_id} ({dimension}-d); they cannot be searched together.",
            hint="run `brain index --sync` to re-embed everything into a fresh collection "
            "(cached embeddings are reused), or switch embedding.model back",
        )
        self.collection = collection
        self.stored_model = stored_model
        self.stored_dimension = stored_dimension
        self.model_id = model_id
        self.dimension = dimension


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
