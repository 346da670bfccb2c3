"""The memory database's tables, as the steps of the one migrations runner
(`indexing.sqlite_db.open_database`): a step is never edited once released, only appended.

- `memories`: one row per memory, `version` bumped by every change, `vec_state` saying whether
  its vector must be (re)written (`pending`) or removed (`stale`).
- `history`: every change with the state before it, so undo can restore any earlier state.
- `profile`: the one profile row; `counters`; `imports`: one row per import run
  (the shared run of `assistant/import_run.py`).

Every time is Unix seconds (REAL) since step 8, as in every other store; ISO text is only what
the CLI, the TUI and export files show (`assistant/memory/clock.py`).
"""

from __future__ import annotations

from indexing.sqlite_db import Schema

_MIGRATIONS: tuple[str, ...] = (
    # 1: initial schema
    """
    CREATE TABLE memories (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        key TEXT,
        text TEXT NOT NULL,
        context TEXT NOT NULL DEFAULT '',
        confidence REAL NOT NULL,
        importance REAL NOT NULL,
        status TEXT NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_used_at TEXT,
        use_count INTEGER NOT NULL DEFAULT 0,
        source TEXT,
        session_id TEXT,
        source_text TEXT,
        superseded_by TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        edited_by_user INTEGER NOT NULL DEFAULT 0,
        vec_state TEXT NOT NULL DEFAULT 'pending'
    );
    CREATE INDEX memories_status ON memories(status);
    CREATE INDEX memories_key ON memories(key) WHERE key IS NOT NULL;
    CREATE INDEX memories_vec ON memories(vec_state) WHERE vec_state != 'ok';
    CREATE TABLE history (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id TEXT NOT NULL,
        event TEXT NOT NULL,
        old_text TEXT,
        new_text TEXT,
        actor TEXT NOT NULL,
        at TEXT NOT NULL,
        old_state TEXT,
        undone INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX history_memory ON history(memory_id, seq);
    CREATE TABLE profile (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        text TEXT NOT NULL,
        updated_at TEXT,
        edited_by_user INTEGER NOT NULL DEFAULT 0,
        pending_text TEXT
    );
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
    # 2: import runs (resume an interrupted `brain memory import`, refuse a repeated one)
    """
    CREATE TABLE imports (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        content_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        total INTEGER NOT NULL,
        committed INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        started_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX imports_hash ON imports(content_hash, id);
    """,
    # 3: whether a run got through its final vector step (a run killed there is finished, its
    # lines all stored, but some memories still lack a vector: the re-run says so and repairs)
    """
    ALTER TABLE imports ADD COLUMN vectors_done INTEGER NOT NULL DEFAULT 1;
    """,
    # 4: the memories a model-written profile was built from (JSON list of ids; NULL: not
    # known, as for profiles written before: then every memory counts as used), so the profile
    # follows its sources when one is edited, deleted or erased
    """
    ALTER TABLE profile ADD COLUMN sources TEXT;
    """,
    # 5: which outside agent (MCP client) made a change, for Actor.AGENT rows
    """
    ALTER TABLE history ADD COLUMN via TEXT;
    """,
    # 6: import run times in Unix seconds, the form of the sessions database's runs, so memory
    # and conversation imports share one run record (assistant/import_run.py). SQLite
    # cannot change a column's type: the table is rebuilt, its ids (and AUTOINCREMENT counter)
    # kept. Old rows are `2024-05-01T12:00:00Z` text, whole seconds, which `%s` reads exactly.
    """
    CREATE TABLE imports_v6 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        content_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        total INTEGER NOT NULL,
        committed INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        started_at REAL NOT NULL,
        finished_at REAL,
        vectors_done INTEGER NOT NULL DEFAULT 1
    );
    INSERT INTO imports_v6 (id, content_hash, name, total, committed, added, started_at,
                            finished_at, vectors_done)
        SELECT id, content_hash, name, total, committed, added,
               CAST(strftime('%s', started_at) AS REAL),
               CAST(strftime('%s', finished_at) AS REAL), vectors_done
        FROM imports;
    DELETE FROM sqlite_sequence WHERE name = 'imports_v6';
    INSERT INTO sqlite_sequence (name, seq) SELECT 'imports_v6', seq FROM sqlite_sequence
        WHERE name = 'imports';
    DROP TABLE imports;
    ALTER TABLE imports_v6 RENAME TO imports;
    CREATE INDEX imports_hash ON imports(content_hash, id);
    """,
    # 7: the pinned memories every recall carries, found without a pass over all memories
    # (`list(pinned=…)` names pinned=1 literally, so SQLite can use this partial index; IF NOT
    # EXISTS: a database whose user_version was set back, as tests do, keeps its index)
    """
    CREATE INDEX IF NOT EXISTS memories_pinned ON memories(status) WHERE pinned = 1;
    """,
    # 8: every time of the memory database in Unix seconds (REAL), the one form of every other
    # store (indexing/clock.py): memories, history and the profile. SQLite cannot change a
    # column's type (and a TEXT column turns a REAL back into text), so the three tables are
    # rebuilt in this step's one transaction, keeping rowids, the history's seq counter and
    # every index. Old values are `2024-05-01T12:00:00Z` text, whole seconds, which `%s` reads
    # exactly; a value already numeric (a database whose user_version was set back) is kept.
    """
    CREATE TABLE memories_v8 (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL,
        key TEXT,
        text TEXT NOT NULL,
        context TEXT NOT NULL DEFAULT '',
        confidence REAL NOT NULL,
        importance REAL NOT NULL,
        status TEXT NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        last_used_at REAL,
        use_count INTEGER NOT NULL DEFAULT 0,
        source TEXT,
        session_id TEXT,
        source_text TEXT,
        superseded_by TEXT,
        version INTEGER NOT NULL DEFAULT 1,
        edited_by_user INTEGER NOT NULL DEFAULT 0,
        vec_state TEXT NOT NULL DEFAULT 'pending'
    );
    INSERT INTO memories_v8 (rowid, id, type, key, text, context, confidence, importance,
                             status, pinned, created_at, updated_at, last_used_at, use_count,
                             source, session_id, source_text, superseded_by, version,
                             edited_by_user, vec_state)
        SELECT rowid, id, type, key, text, context, confidence, importance, status, pinned,
               CASE typeof(created_at) WHEN 'text'
                    THEN CAST(strftime('%s', created_at) AS REAL) ELSE created_at END,
               CASE typeof(updated_at) WHEN 'text'
                    THEN CAST(strftime('%s', updated_at) AS REAL) ELSE updated_at END,
               CASE typeof(last_used_at) WHEN 'text'
                    THEN CAST(strftime('%s', last_used_at) AS REAL) ELSE last_used_at END,
               use_count, source, session_id, source_text, superseded_by, version,
               edited_by_user, vec_state
        FROM memories;
    DROP TABLE memories;
    ALTER TABLE memories_v8 RENAME TO memories;
    CREATE INDEX memories_status ON memories(status);
    CREATE INDEX memories_key ON memories(key) WHERE key IS NOT NULL;
    CREATE INDEX memories_vec ON memories(vec_state) WHERE vec_state != 'ok';
    CREATE INDEX memories_pinned ON memories(status) WHERE pinned = 1;
    CREATE TABLE history_v8 (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        memory_id TEXT NOT NULL,
        event TEXT NOT NULL,
        old_text TEXT,
        new_text TEXT,
        actor TEXT NOT NULL,
        at REAL NOT NULL,
        old_state TEXT,
        undone INTEGER NOT NULL DEFAULT 0,
        via TEXT
    );
    INSERT INTO history_v8 (seq, memory_id, event, old_text, new_text, actor, at, old_state,
                            undone, via)
        SELECT seq, memory_id, event, old_text, new_text, actor,
               CASE typeof(at) WHEN 'text' THEN CAST(strftime('%s', at) AS REAL) ELSE at END,
               old_state, undone, via
        FROM history;
    DELETE FROM sqlite_sequence WHERE name = 'history_v8';
    INSERT INTO sqlite_sequence (name, seq) SELECT 'history_v8', seq FROM sqlite_sequence
        WHERE name = 'history';
    DROP TABLE history;
    ALTER TABLE history_v8 RENAME TO history;
    CREATE INDEX history_memory ON history(memory_id, seq);
    CREATE TABLE profile_v8 (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        text TEXT NOT NULL,
        updated_at REAL,
        edited_by_user INTEGER NOT NULL DEFAULT 0,
        pending_text TEXT,
        sources TEXT
    );
    INSERT INTO profile_v8 (id, text, updated_at, edited_by_user, pending_text, sources)
        SELECT id, text,
               CASE typeof(updated_at) WHEN 'text'
                    THEN CAST(strftime('%s', updated_at) AS REAL) ELSE updated_at END,
               edited_by_user, pending_text, sources
        FROM profile;
    DROP TABLE profile;
    ALTER TABLE profile_v8 RENAME TO profile;
    """,
)
SCHEMA = Schema("memory store", _MIGRATIONS)
SCHEMA_VERSION = SCHEMA.version
