"""Opening a SQLite database and bringing its schema up to date: one way for every store.

The knowledge manifest, the memory store, the chat sessions and the retrieval log each describe
their schema as a `Schema`: an ordered tuple of steps, step n taking `PRAGMA user_version` from
n-1 to n. `open_database` connects, sets the store's pragmas and runs the missing steps:

- each step in its own transaction, so a crash leaves the database at the previous version,
  never half-way through one;
- `BEGIN IMMEDIATE` takes the write lock *before* the version is read again: another process
  opening the same new home at the same moment may have applied the step while we waited;
- a database written by a newer release is refused with a hint, never "upgraded" backwards;
- a file that is not a database (damaged, truncated) becomes the store's own user-facing error;
  an operational failure (locked, read-only) is raised as it is, since it is not damage;
- in a folder this process cannot write (a read-only mount, a home it may only read) the
  database is opened read-only, so reading needs no write access: SQLite cannot make the WAL's
  `-shm` there, so a database whose WAL is empty or gone is opened `immutable` (nobody can
  write it either), one with a WAL and its `-shm` left by a writer `mode=ro` (which reads the
  WAL). Any write through such a connection fails as SQLite's "readonly database".

Steps are plain DDL/DML (no triggers, no ';' inside string literals), so each is run statement
by statement inside its one transaction. Never edit a released step: add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from indexing.errors import HintedError
from indexing.filesystem import can_write

NEWER_HINT = "upgrade second-brain, or move the file away to start fresh"


@dataclass(frozen=True, slots=True)
class Schema:
    label: str  # what the database is, for messages: "sessions database"
    steps: tuple[str, ...]
    # For a database from before its schema lived in `user_version`: called inside the first
    # write transaction when user_version is 0; returns the version it really is (0 = new).
    adopt: Callable[[sqlite3.Connection], int] | None = None

    @property
    def version(self) -> int:
        return len(self.steps)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def open_database(
    path: Path | str,
    schema: Schema,
    *,
    error: type[HintedError],
    damaged_hint: str,
    pragmas: Sequence[str] = (),
    timeout: float = 30.0,
    autocommit: bool = True,
) -> sqlite3.Connection:
    """A connection to `path` (shared by threads: callers serialise with their own lock) with
    the schema up to date. `autocommit`: transactions are explicit (`BEGIN IMMEDIATE`);
    otherwise Python's default, `with conn:` commits. Failures raise `error(message, hint)`."""
    if str(path) != ":memory:":
        file = Path(path)
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            size = file.stat().st_size
        except FileNotFoundError:
            _create(file, schema, error=error, damaged_hint=damaged_hint, pragmas=pragmas,
                    timeout=timeout, autocommit=autocommit)
        else:
            if size == 0:
                # Never a database this app made (new ones appear complete, see _create): a
                # truncated file. Read as empty it would silently stand for "nothing stored".
                raise error(f"the {schema.label} {file} is empty (0 bytes): it was truncated or "
                            "damaged, so it is not read as empty", damaged_hint)
    read_only = None if str(path) == ":memory:" else read_only_uri(Path(path))
    conn = sqlite3.connect(
        read_only or str(path), timeout=timeout, check_same_thread=False,
        isolation_level=None if autocommit else "DEFERRED", uri=read_only is not None,
    )
    try:
        for pragma in pragmas:
            conn.execute(f"PRAGMA {pragma}")
        migrate(conn, schema, path=path, error=error)
    except sqlite3.OperationalError:
        # Locked, read-only, vanished directory: not damage. The caller says what to fix
        # (the CLI checks whether the data dir is writable).
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed"
        conn.close()
        raise error(f"cannot open the {schema.label} {path}: {exc}", damaged_hint) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def read_only_uri(file: Path) -> str | None:
    """The URI opening `file` read-only when its folder is not writable by this process (see
    the module doc); None when it is writable, or when a WAL left without its `-shm` could be
    read by no mode (then the open fails as SQLite says: read-only, never damage)."""
    from urllib.parse import quote

    if can_write(file.parent):
        return None
    wal, shm = Path(f"{file}-wal"), Path(f"{file}-shm")
    try:
        pending = wal.stat().st_size > 0
    except FileNotFoundError:
        pending = False
    if not pending:
        return f"file:{quote(str(file.absolute()))}?mode=ro&immutable=1"
    return f"file:{quote(str(file.absolute()))}?mode=ro" if shm.exists() else None


def _create(
    path: Path,
    schema: Schema,
    *,
    error: type[HintedError],
    damaged_hint: str,
    pragmas: Sequence[str],
    timeout: float,
    autocommit: bool,
) -> None:
    """Make a new database under a temporary name, migrated, then link it into place: a kill
    never leaves a half-made (0-byte) file, so an empty file always means damage."""
    import os
    import secrets

    temp = path.with_name(f".{path.name}.new-{os.getpid()}-{secrets.token_hex(4)}")
    conn = sqlite3.connect(str(temp), timeout=timeout,
                           isolation_level=None if autocommit else "DEFERRED")
    try:
        for pragma in pragmas:
            conn.execute(f"PRAGMA {pragma}")
        migrate(conn, schema, path=path, error=error)
    finally:
        conn.close()  # the last connection: checkpoints and removes the WAL
    os.chmod(temp, 0o600)  # private whatever the umask: it holds the user's data
    try:
        os.link(temp, path)
    except FileExistsError:
        pass  # another process made it first: use theirs
    finally:
        for made in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm"), Path(f"{temp}-journal")):
            made.unlink(missing_ok=True)


def migrate(
    conn: sqlite3.Connection, schema: Schema, *, path: Path | str, error: type[HintedError]
) -> int:
    """Bring `conn` to `schema.version`; returns the version found before."""
    found = schema_version(conn)
    if found > schema.version:
        raise error(
            f"{path}: the {schema.label} has schema version {found}, newer than this "
            f"second-brain understands ({schema.version})",
            NEWER_HINT,
        )
    if found == 0 and schema.adopt is not None:
        _step(conn, 0, partial(_adopt, conn, schema.adopt))
        found = schema_version(conn)
    for version in range(found + 1, schema.version + 1):
        _step(conn, version, partial(_apply, conn, schema.steps[version - 1], version))
    return found


def _step(conn: sqlite3.Connection, version: int, apply: Callable[[], None]) -> None:
    """Run `apply` in one write transaction unless another process got to `version` first."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if version == 0 or schema_version(conn) < version:
            apply()
        conn.execute("COMMIT")
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise


def _apply(conn: sqlite3.Connection, step: str, version: int) -> None:
    # Statements one by one (executescript would commit the step's transaction); a `;` inside
    # a statement (a trigger's body) does not end it: sqlite3.complete_statement says when.
    statement = ""
    for piece in step.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n\t;"):
                conn.execute(statement)
            statement = ""
    if statement.strip(" \n\t;"):
        conn.execute(statement)  # an incomplete last statement: SQLite says what is wrong
    conn.execute(f"PRAGMA user_version = {version}")


def _adopt(conn: sqlite3.Connection, adopt: Callable[[sqlite3.Connection], int]) -> None:
    if schema_version(conn) == 0:
        version = adopt(conn)
        if version:
            conn.execute(f"PRAGMA user_version = {int(version)}")
