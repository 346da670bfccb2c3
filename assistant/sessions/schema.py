"""The sessions database's schema: ordered migration steps run by `indexing.sqlite_db`.

Each step runs in its own transaction, so a database written by any earlier release opens in
this one; a database from a newer release is refused rather than damaged. Steps are only ever
appended.
"""

from __future__ import annotations

from indexing.sqlite_db import Schema

MIGRATIONS: tuple[str, ...] = (
    # 1: sessions, turns, the sources and memories each turn used.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        summary TEXT NOT NULL DEFAULT '',
        summary_through INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL CHECK (status IN ('complete', 'interrupted', 'failed')),
        error TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        low_confidence INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        timings TEXT NOT NULL DEFAULT '{}',
        tools TEXT NOT NULL DEFAULT '[]',
        UNIQUE (session_id, seq)
    );
    CREATE TABLE turn_sources (
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        n INTEGER NOT NULL,
        cited INTEGER NOT NULL DEFAULT 0,
        chunk_id TEXT NOT NULL,
        source TEXT NOT NULL,
        relpath TEXT NOT NULL,
        heading TEXT NOT NULL DEFAULT '',
        start_line INTEGER NOT NULL DEFAULT 0,
        end_line INTEGER NOT NULL DEFAULT 0,
        page INTEGER,
        score REAL NOT NULL DEFAULT 0,
        text TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (turn_id, n)
    );
    CREATE TABLE turn_memories (
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        memory_id TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        score REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (turn_id, position)
    );
    CREATE INDEX turns_by_session ON turns(session_id, seq);
    CREATE INDEX sessions_by_update ON sessions(updated_at);
    """,
    # 2: the retrieval-log entry of each turn, so 👍/👎 on an old answer reaches the log.
    """
    ALTER TABLE turns ADD COLUMN log_id INTEGER;
    """,
    # 3: how far long-term memory extraction has read each session.
    """
    ALTER TABLE sessions ADD COLUMN extracted_through INTEGER NOT NULL DEFAULT 0;
    """,
    # 4: the answer stopped at the model's length limit (Ollama's done_reason "length").
    """
    ALTER TABLE turns ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
    """,
    # 5: conversation recall (assistant/conversations): the caller's reference of each imported
    # line, import runs (resume / refuse a repeat), model-written session summaries, and the
    # units of the conversation index (one per turn or summary; their vectors live in Chroma,
    # their keywords in the `conversation_fts` table, both removed with the session).
    """
    CREATE TABLE turn_refs (
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
        ref TEXT NOT NULL,
        PRIMARY KEY (turn_id, position)
    );
    CREATE TABLE session_imports (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        content_hash TEXT NOT NULL,
        name TEXT NOT NULL,
        total INTEGER NOT NULL,
        committed INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        started_at REAL NOT NULL,
        finished_at REAL
    );
    CREATE INDEX session_imports_hash ON session_imports(content_hash, id);
    CREATE TABLE session_summaries (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        through_seq INTEGER NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL
    );
    CREATE TABLE conversation_units (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('turn', 'summary')),
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        turn_id INTEGER REFERENCES turns(id) ON DELETE CASCADE,
        created_at REAL NOT NULL,
        text_hash TEXT NOT NULL
    );
    CREATE INDEX conversation_units_by_time ON conversation_units(created_at);
    CREATE INDEX conversation_units_by_session ON conversation_units(session_id);
    """,
    # 6: the page a PDF source ends on, so a chunk over a page break is cited "p. 1–2".
    """
    ALTER TABLE turn_sources ADD COLUMN end_page INTEGER;
    """,
    # 7: earlier conversations recalled into a turn ([c<n>] citations), copied by value like
    # sources. Deleting the recalled turn or session (by any code path) blanks the copies in
    # the same transaction: the triggers leave only the CONVERSATION_DELETED marker (turn.py).
    # The model-written title of a session summary; the hash of each index unit's embedded
    # text, so a unit whose keyword text changed (a new neighbouring turn) keeps its vector.
    """
    CREATE TABLE turn_conversations (
        turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
        n INTEGER NOT NULL,
        cited INTEGER NOT NULL DEFAULT 0,
        unit_id TEXT NOT NULL,
        session_id TEXT,
        source_turn_id INTEGER,
        seq INTEGER,
        title TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        question TEXT NOT NULL DEFAULT '',
        answer TEXT NOT NULL DEFAULT '',
        score REAL NOT NULL DEFAULT 0,
        PRIMARY KEY (turn_id, n)
    );
    CREATE INDEX turn_conversations_by_session ON turn_conversations(session_id);
    CREATE INDEX turn_conversations_by_turn ON turn_conversations(source_turn_id);
    CREATE TRIGGER turn_conversations_forget_turn AFTER DELETE ON turns BEGIN
        UPDATE turn_conversations SET unit_id = '', session_id = NULL, source_turn_id = NULL,
            seq = NULL, title = 'conversation deleted', question = '', answer = ''
        WHERE source_turn_id = OLD.id;
    END;
    CREATE TRIGGER turn_conversations_forget_session AFTER DELETE ON sessions BEGIN
        UPDATE turn_conversations SET unit_id = '', session_id = NULL, source_turn_id = NULL,
            seq = NULL, title = 'conversation deleted', question = '', answer = ''
        WHERE session_id = OLD.id;
    END;
    ALTER TABLE session_summaries ADD COLUMN title TEXT NOT NULL DEFAULT '';
    ALTER TABLE conversation_units ADD COLUMN vector_hash TEXT NOT NULL DEFAULT '';
    """,
)
SCHEMA = Schema("sessions database", MIGRATIONS)
SCHEMA_VERSION = SCHEMA.version
