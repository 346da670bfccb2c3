"""Which of the home's databases is damaged, and how to recover: one place for every store.

A damaged SQLite file is often only noticed deep inside a query ("database disk image is
malformed", with no file named). When that happens, `damage_error(paths)` checks each store's
file — empty, not SQLite, or failing SQLite's own `quick_check` — and names the first damaged
one with what to do and what is lost. `brain doctor` runs the same checks.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from assistant.errors import UserError
from assistant.paths import AppPaths
from indexing.vector_errors import recovery_hint

DAMAGE = re.compile(r"malformed|not a database|disk image|database corrupt|file is empty",
                    re.IGNORECASE)

KNOWLEDGE_RECOVERY = (
    "move it aside, then `brain index PATH…` with your folders rebuilds it from the files "
    "(embeddings come back from the cache; only the list of folders was kept in it)"
)
MEMORY_RECOVERY = (
    "your memories exist only in this file: restore it from a backup if you have one (or "
    "`brain memory import` an earlier `brain memory export`); otherwise move it aside to start "
    "with no memories"
)
SESSIONS_RECOVERY = "move it aside to start with no saved chats (the chats in it are lost)"
LOG_RECOVERY = "move it aside to start a new log (only the search history is lost)"
EVENTS_RECOVERY = "move it aside to start a new event log (only the agents' events are lost)"


@dataclass(frozen=True, slots=True)
class StoreFile:
    label: str
    path: Path
    recovery: str


def store_files(paths: AppPaths) -> list[StoreFile]:
    return [
        StoreFile("knowledge database", paths.knowledge_db, KNOWLEDGE_RECOVERY),
        StoreFile("memory store", paths.memory_db, MEMORY_RECOVERY),
        StoreFile("sessions database", paths.sessions_db, SESSIONS_RECOVERY),
        StoreFile("retrieval log", paths.retrieval_log_db, LOG_RECOVERY),
        StoreFile("event log", paths.events_db, EVENTS_RECOVERY),
        StoreFile("vector store database", paths.vectors_dir / "chroma.sqlite3",
                  recovery_hint(paths.vectors_dir)),
    ]


def damage(path: Path, *, timeout: float = 5.0) -> str | None:
    """Why `path` is a damaged SQLite file, or None (missing, busy or sound)."""
    try:
        with path.open("rb") as handle:
            header = handle.read(16)
    except OSError:
        return None
    if not header:
        return "the file is empty (0 bytes)"
    if header != b"SQLite format 3\x00":
        return "not a SQLite database"
    # Read-only, and leaving the home as it was: a WAL database read without its -wal/-shm
    # files would get them created, so when no process has it open (no -wal file) it is read
    # as immutable.
    uri = path.resolve().as_uri() + "?mode=ro"
    if not Path(f"{path}-wal").exists():
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    except sqlite3.Error:
        return None
    try:
        rows = conn.execute("PRAGMA quick_check(3)").fetchall()
    except UnicodeDecodeError:
        return "text that is not UTF-8 in its schema"
    except sqlite3.OperationalError as exc:
        return str(exc) if DAMAGE.search(str(exc)) else None  # locked: not damage
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    lines = [line.strip() for r in rows if r and r[0] != "ok" for line in str(r[0]).splitlines()]
    problems = [line for line in lines if line and not line.startswith("***")]
    if not problems:
        return None
    text = "; ".join(problems)
    return text if len(text) <= 120 else text[:117] + "…"


def damaged_stores(paths: AppPaths) -> list[tuple[StoreFile, str]]:
    found = []
    for store in store_files(paths):
        reason = damage(store.path)
        if reason is not None:
            found.append((store, reason))
    return found


def damage_error(paths: AppPaths) -> UserError | None:
    """The first damaged store as a one-line error naming the file and the recovery."""
    found = damaged_stores(paths)
    if not found:
        return None
    store, reason = found[0]
    return UserError(f"the {store.label} {store.path} is damaged ({reason})",
                     hint=store.recovery)


def looks_like_damage(exc: BaseException) -> bool:
    """An exception (or its cause) saying a database file is damaged."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (isinstance(current, sqlite3.DatabaseError) and not isinstance(
                current, sqlite3.OperationalError)) or DAMAGE.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False
