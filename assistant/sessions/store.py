"""Persistent chat sessions in SQLite (paths.sessions_db).

The schema is upgraded by `indexing.sqlite_db` (ordered steps, each in its own transaction), so
a database written by any earlier release opens in this one; a database from a newer release is
refused rather than damaged.

Each turn stores the numbered sources and recalled memories the model saw, copied by value (path,
heading, lines, text) so a session can be shown and exported after the files changed or left the
index.
"""

from __future__ import annotations

import builtins
import json
import secrets
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assistant.errors import UserError
from assistant.sessions.schema import SCHEMA
from assistant.sessions.turn import (
    CONVERSATION_DELETED,
    MEMORY_FORGOTTEN,
    SOURCE_REMOVED,
    ConversationItem,
    KnowledgeItem,
    MemoryItem,
    Recalled,
    Session,
    Source,
    ToolUse,
    Turn,
)
from assistant.store_health import SESSIONS_RECOVERY
from indexing.clock import EpochClock, wall_clock
from indexing.scrub import scrub_connection
from indexing.sqlite_db import open_database

TITLE_CHARS = 60


class SessionNotFound(UserError):
    def __init__(self, ref: str) -> None:
        super().__init__(
            f"no session matches {ref!r}", hint="`brain sessions list` shows the session ids"
        )


def new_session_id() -> str:
    return secrets.token_hex(4)


def title_from(question: str) -> str:
    line = " ".join(question.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


class SessionStore:
    """Thread-safe access to the sessions database (the TUI's workers and the engine share it)."""

    def __init__(self, conn: sqlite3.Connection, path: Path | str = ":memory:", *,
                 clock: EpochClock = wall_clock) -> None:
        self._conn = conn
        self._lock = threading.RLock()
        self.path = path
        self.clock = clock  # every row of this database is stamped by it (conversations too)

    @classmethod
    def open(cls, path: Path | str, *, clock: EpochClock = wall_clock) -> SessionStore:
        if str(path) != ":memory:":
            path = Path(path)
        conn = open_database(
            path, SCHEMA, error=UserError, timeout=10, autocommit=False,
            pragmas=(
                "foreign_keys = ON", "journal_mode = WAL",
                # Deleted sessions are overwritten on disk, not left in free pages.
                "secure_delete = ON",
            ),
            damaged_hint=SESSIONS_RECOVERY,
        )
        conn.row_factory = sqlite3.Row
        return cls(conn, path, clock=clock)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, for the conversation index kept in the same database (take `lock`)."""
        return self._conn

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (commit on success, rollback on error), under the store lock."""
        with self._tx() as conn:
            yield conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._conn:
            yield self._conn

    # --- sessions ------------------------------------------------------------------------

    def create(self, *, model: str = "", title: str = "") -> Session:
        now = self.clock()
        with self._tx() as conn:
            for _ in range(5):
                sid = new_session_id()
                try:
                    conn.execute(
                        "INSERT INTO sessions (id, title, created_at, updated_at, model) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (sid, title, now, now, model),
                    )
                    break
                except sqlite3.IntegrityError:
                    continue  # 32-bit id collision: try another
            else:  # pragma: no cover - five collisions in a row
                raise RuntimeError("could not allocate a session id")
        return self.get(sid)

    def _session(self, row: sqlite3.Row) -> Session:
        return Session(
            id=row["id"],
            title=row["title"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            model=row["model"],
            summary=row["summary"],
            summary_through=row["summary_through"],
            extracted_through=row["extracted_through"],
            turn_count=row["turn_count"],
        )

    _SELECT = (
        "SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS turn_count "
        "FROM sessions s"
    )

    def get(self, session_id: str) -> Session:
        with self._lock:
            row = self._conn.execute(f"{self._SELECT} WHERE s.id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return self._session(row)

    def resolve(self, ref: str) -> Session:
        """A session by id or unique id prefix (what users type from `sessions list`)."""
        ref = ref.strip()
        if not ref:
            raise SessionNotFound(ref)
        with self._lock:
            rows = self._conn.execute(
                f"{self._SELECT} WHERE s.id LIKE ? ESCAPE '\\' ORDER BY s.updated_at DESC",
                (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
            ).fetchall()
        exact = [r for r in rows if r["id"] == ref]
        if exact:
            return self._session(exact[0])
        if len(rows) == 1:
            return self._session(rows[0])
        if not rows:
            raise SessionNotFound(ref)
        raise UserError(
            f"{ref!r} matches {len(rows)} sessions", hint="type more characters of the id"
        )

    def others_version(self) -> int:
        """SQLite's `PRAGMA data_version`: moves when another connection (another process)
        commits to this database, not on this connection's own writes. Poll it to notice a
        `brain sessions import` or `forget-all` run beside this process."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def list(self, limit: int | None = None) -> list[Session]:
        sql = f"{self._SELECT} ORDER BY s.updated_at DESC, s.rowid DESC"
        params: tuple[Any, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        with self._lock:
            return [self._session(r) for r in self._conn.execute(sql, params)]

    def latest(self) -> Session | None:
        sessions = self.list(limit=1)
        return sessions[0] if sessions else None

    def rename(self, session_id: str, title: str) -> Session:
        title = " ".join(title.split())
        if not title:
            raise UserError("a session title cannot be empty")
        with self._tx() as conn:
            cur = conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))
        if cur.rowcount == 0:
            raise SessionNotFound(session_id)
        return self.get(session_id)

    def delete(self, session_id: str) -> None:
        with self._tx() as conn:
            cur = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        if cur.rowcount == 0:
            raise SessionNotFound(session_id)

    def log_ids(self, session_id: str) -> set[int]:
        """The retrieval-log entries of a session's turns (erased with the session)."""
        with self._lock:
            return {int(r[0]) for r in self._conn.execute(
                "SELECT log_id FROM turns WHERE session_id = ? AND log_id IS NOT NULL",
                (session_id,))}

    # --- erasure: what the user removed leaves the stored turns ------------------------------

    def redact_sources(self, folders: Sequence[str]) -> int:
        """Keep the turns, but forget the sources they used from these folders (or files):
        path, heading, lines and text become the `SOURCE_REMOVED` marker. Returns the count."""
        if not folders:
            return 0
        clauses = " OR ".join("source = ? OR source LIKE ? ESCAPE '\\'" for _ in folders)
        params: list[str] = []
        for folder in folders:
            prefix = folder.rstrip("/")
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            params += [prefix, escaped + "/%"]
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE turn_sources SET chunk_id = '', source = '', relpath = ?, heading = '', "
                f"start_line = 0, end_line = 0, page = NULL, text = '' WHERE {clauses}",
                (SOURCE_REMOVED, *params),
            )
        return cur.rowcount

    def redact_memories(
        self, memory_ids: Collection[str] | None, texts: Collection[str] = ()
    ) -> int:
        """Keep the turns, but forget the memories they used (all of them when `memory_ids` is
        None): the recalled text, and a `remember` tool call's text and result, become the
        `MEMORY_FORGOTTEN` marker. `texts` are the forgotten memories' texts (tool calls carry
        text, not ids). Returns the rows changed."""
        changed = 0
        with self._tx() as conn:
            if memory_ids is None:
                changed += conn.execute(
                    "UPDATE turn_memories SET memory_id = '', text = ? WHERE text != ?",
                    (MEMORY_FORGOTTEN, MEMORY_FORGOTTEN)).rowcount
            else:
                for memory_id in memory_ids:
                    changed += conn.execute(
                        "UPDATE turn_memories SET memory_id = '', text = ? WHERE memory_id = ?",
                        (MEMORY_FORGOTTEN, memory_id)).rowcount
            for turn_id, tools in conn.execute(
                "SELECT id, tools FROM turns WHERE tools LIKE '%\"remember\"%'"
            ).fetchall():
                uses = json.loads(tools or "[]")
                redacted = [_forget_remembered(u, None if memory_ids is None else texts)
                            for u in uses]
                if redacted != uses:
                    conn.execute("UPDATE turns SET tools = ? WHERE id = ?",
                                 (json.dumps(redacted, ensure_ascii=False), turn_id))
                    changed += 1
        return changed

    def scrub(self) -> None:
        """Leave no trace of deleted or redacted rows in the file (indexing.scrub)."""
        with self._lock:
            autocommit = self._conn.isolation_level
            self._conn.isolation_level = None
            try:
                scrub_connection(self._conn, label=f"sessions database {self.path}")
            finally:
                self._conn.isolation_level = autocommit

    def set_model(self, session_id: str, model: str) -> None:
        with self._tx() as conn:
            conn.execute("UPDATE sessions SET model = ? WHERE id = ?", (model, session_id))

    def set_extracted(self, session_id: str, through_seq: int) -> None:
        """Record that memory extraction has read turns up to `through_seq`."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE sessions SET extracted_through = MAX(extracted_through, ?) WHERE id = ?",
                (through_seq, session_id),
            )

    def unextracted(self, limit: int) -> builtins.list[str]:
        """Up to `limit` sessions, most recently used first, with turns memory extraction has
        not read (quitting leaves them; so does a failed extraction). Imported conversations
        are not the user's chats here and are left out until continued in one."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT s.id FROM sessions s WHERE s.model != 'import' AND EXISTS ("
                " SELECT 1 FROM turns t WHERE t.session_id = s.id"
                " AND t.seq > s.extracted_through AND t.status != 'failed')"
                " ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ?", (limit,)).fetchall()
        return [str(r[0]) for r in rows]

    def set_summary(self, session_id: str, summary: str, through_seq: int) -> None:
        """Store the rolling summary covering turns up to `through_seq` (never moves back)."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE sessions SET summary = ?, summary_through = ? "
                "WHERE id = ? AND summary_through <= ?",
                (summary, through_seq, session_id, through_seq),
            )

    # --- turns ---------------------------------------------------------------------------

    def add_turn(
        self,
        session_id: str,
        question: str,
        answer: str,
        *,
        status: str,
        model: str = "",
        error: str = "",
        low_confidence: bool = False,
        sources: Sequence[Source] = (),
        memories: Sequence[MemoryItem] = (),
        tools: Sequence[ToolUse] = (),
        timings: dict[str, float] | None = None,
        log_id: int | None = None,
        truncated: bool = False,
        conversations: Sequence[Recalled] = (),
    ) -> Turn:
        now = self.clock()
        with self._tx() as conn:
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            try:
                cur = conn.execute(
                    "INSERT INTO turns (session_id, seq, question, answer, status, error, model, "
                    "low_confidence, created_at, timings, tools, log_id, truncated) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session_id, seq, question, answer, status, error, model,
                        int(low_confidence), now, json.dumps(timings or {}),
                        json.dumps([_tool_json(t) for t in tools], ensure_ascii=False), log_id,
                        int(truncated),
                    ),
                )
            except sqlite3.IntegrityError as exc:
                raise SessionNotFound(session_id) from exc
            turn_id = int(cur.lastrowid or 0)
            _insert_evidence(conn, turn_id, sources, memories, conversations)
            title = conn.execute(
                "SELECT title FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()[0]
            conn.execute(
                "UPDATE sessions SET updated_at = ?, title = ? WHERE id = ?",
                (now, title or title_from(question), session_id),
            )
        return self.turn(turn_id)

    def delete_turn(self, turn_id: int) -> None:
        with self._tx() as conn:
            conn.execute("DELETE FROM turns WHERE id = ?", (turn_id,))

    def turn(self, turn_id: int) -> Turn:
        with self._lock:
            row = self._conn.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
            if row is None:
                raise UserError(f"no turn {turn_id}")
            return self._turn(row)

    def turns(self, session_id: str, *, after_seq: int = 0) -> builtins.list[Turn]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT * FROM turns WHERE session_id = ? AND seq > ? ORDER BY seq",
                (session_id, after_seq),
            ).fetchall()
            return [self._turn(r) for r in rows]

    def _turn(self, row: sqlite3.Row) -> Turn:
        sources = tuple(
            Source(
                n=s["n"],
                cited=bool(s["cited"]),
                item=KnowledgeItem(
                    chunk_id=s["chunk_id"], text=s["text"], source=s["source"],
                    relpath=s["relpath"], heading=s["heading"], score=s["score"],
                    start_line=s["start_line"], end_line=s["end_line"], page=s["page"],
                    end_page=s["end_page"],
                ),
            )
            for s in self._conn.execute(
                "SELECT * FROM turn_sources WHERE turn_id = ? ORDER BY n", (row["id"],)
            )
        )
        memories = tuple(
            MemoryItem(m["memory_id"], m["text"], m["kind"], m["score"])
            for m in self._conn.execute(
                "SELECT * FROM turn_memories WHERE turn_id = ? ORDER BY position", (row["id"],)
            )
        )
        conversations = tuple(
            Recalled(
                n=c["n"],
                cited=bool(c["cited"]),
                item=ConversationItem(
                    unit_id=c["unit_id"], session_id=c["session_id"] or "", title=c["title"],
                    seq=c["seq"], created_at=c["created_at"], question=c["question"],
                    answer=c["answer"], score=c["score"],
                ),
            )
            for c in self._conn.execute(
                "SELECT * FROM turn_conversations WHERE turn_id = ? ORDER BY n", (row["id"],)
            )
        )
        return Turn(
            id=row["id"],
            session_id=row["session_id"],
            seq=row["seq"],
            question=row["question"],
            answer=row["answer"],
            status=row["status"],
            created_at=row["created_at"],
            model=row["model"],
            error=row["error"],
            low_confidence=bool(row["low_confidence"]),
            sources=sources,
            memories=memories,
            tools=tuple(_tool_from(t) for t in json.loads(row["tools"] or "[]")),
            timings=json.loads(row["timings"] or "{}"),
            log_id=row["log_id"],
            truncated=bool(row["truncated"]),
            conversations=conversations,
        )


def _forget_remembered(use: dict[str, Any], texts: Collection[str] | None) -> dict[str, Any]:
    """A `remember` tool call whose memory was forgotten (every one when `texts` is None)."""
    if use.get("name") != "remember":
        return use
    said = str((use.get("arguments") or {}).get("text", ""))
    result = str(use.get("result", ""))
    if texts is not None and not any(t and (t == said or t in result) for t in texts):
        return use
    return {**use, "arguments": {"text": MEMORY_FORGOTTEN}, "result": MEMORY_FORGOTTEN}


def _tool_json(tool: ToolUse) -> dict[str, Any]:
    return {"name": tool.name, "arguments": tool.arguments, "result": tool.result, "ok": tool.ok}


def _tool_from(data: dict[str, Any]) -> ToolUse:
    return ToolUse(
        name=str(data.get("name", "")),
        arguments=dict(data.get("arguments") or {}),
        result=str(data.get("result", "")),
        ok=bool(data.get("ok", True)),
    )


def _insert_evidence(
    conn: sqlite3.Connection,
    turn_id: int,
    sources: Sequence[Source],
    memories: Sequence[MemoryItem],
    conversations: Sequence[Recalled],
) -> None:
    """The turn's evidence rows (sources, memories, recalled conversations), inside the
    caller's transaction so a turn is never stored without them."""
    conn.executemany(
        "INSERT INTO turn_sources (turn_id, n, cited, chunk_id, source, relpath, heading, "
        "start_line, end_line, page, score, text, end_page) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                turn_id, s.n, int(s.cited), s.item.chunk_id, s.item.source,
                s.item.relpath, s.item.heading, s.item.start_line, s.item.end_line,
                s.item.page, s.item.score, s.item.text, s.item.end_page,
            )
            for s in sources
        ],
    )
    conn.executemany(
        "INSERT INTO turn_memories (turn_id, position, memory_id, kind, text, score) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (turn_id, i, m.memory_id, m.kind, m.text, m.score)
            for i, m in enumerate(memories)
        ],
    )
    conn.executemany(
        "INSERT INTO turn_conversations (turn_id, n, cited, unit_id, session_id, "
        "source_turn_id, seq, title, created_at, question, answer, score) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (turn_id, c.n, int(c.cited), c.item.unit_id, c.item.session_id,
             c.item.turn_id, c.item.seq, c.item.title, c.item.created_at,
             c.item.question, c.item.answer, c.item.score)
            for c in conversations
        ],
    )
    # Recalled meanwhile and deleted since (another window): no copy may outlive it.
    conn.execute(
        "UPDATE turn_conversations SET unit_id = '', session_id = NULL, "
        "source_turn_id = NULL, seq = NULL, title = ?, question = '', answer = '' "
        "WHERE turn_id = ? AND ((source_turn_id IS NOT NULL AND source_turn_id NOT IN "
        "(SELECT id FROM turns)) OR (session_id IS NOT NULL AND session_id NOT IN "
        "(SELECT id FROM sessions)))",
        (CONVERSATION_DELETED, turn_id),
    )
