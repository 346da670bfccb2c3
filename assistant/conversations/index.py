"""The conversation index: every turn and every session (title + summary) as a search unit.

SQLite (the sessions database) is the source of truth; the index is derived from it:
- `conversation_units` (same database) lists what is indexed, with each unit's time and text
  hash; the keyword table `conversation_fts` (same database, the shared FTS5 `KeywordIndex` and
  tokenizer) holds its words; the Chroma collection `conversations-<model>` its vector.
- Writing follows the knowledge sync's crash-safe order: embed, upsert the vectors, then one
  SQLite transaction adds the units and their keywords. A crash between the two leaves vectors
  without a unit, which `reconcile()` (run by every `sync()`) deletes; a unit whose vector is
  missing (Chroma folder lost, model changed) is embedded again.
- Erasure needs no cooperation from whoever deletes: units cascade from their turn and session
  (foreign keys) and a trigger removes a unit's keywords in the same transaction, so `brain
  sessions rm`, the TUI or a forget-all leave no text in the index. Their vectors are removed
  by the next `reconcile()`; `forget()` runs it at once and merges the FTS segments.
- Turns stored by the chat engine (or any older release) are picked up by the next `sync()`:
  nothing needs to call the index at store time for the index to become complete.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from assistant.conversations.documents import (
    UnitDoc,
    said_text,
    summary_doc,
    turn_doc,
    turn_unit_id,
)
from assistant.conversations.topic import COMMON_SHARE
from indexing.derived_index import DerivedIndex, Rows, VectorDoc, VectorIndex
from indexing.keywords import KeywordIndex
from indexing.lazy import Lazy
from indexing.progress import Phase, ProgressCallback, SyncProgress

if TYPE_CHECKING:
    from assistant.sessions.store import SessionStore
    from indexing.embedder import Embedder

log = logging.getLogger(__name__)

KEYWORD_TABLE = "conversation_fts"
UNITS_TABLE = "conversation_units"


# Units per embed → upsert round of a reconcile (and of a large write).
RECONCILE_BATCH = 256


@dataclass(frozen=True, slots=True)
class IndexReport:
    indexed: int = 0  # units written (new or changed)
    repaired: int = 0  # vectors re-embedded for units that had none
    removed: int = 0  # orphan vectors deleted
    complete: bool = True  # False: a deadline stopped it, a later sync indexes the rest
    embedded: int = 0  # of `indexed`, those whose vector was computed (the rest kept theirs)

    def summary(self) -> str:
        parts = [f"indexed {self.indexed} unit{'s' if self.indexed != 1 else ''}"]
        if self.indexed:
            parts.append(f"embedded {self.embedded}")
        if self.repaired:
            parts.append(f"re-embedded {self.repaired}")
        if self.removed:
            parts.append(f"removed {self.removed} stale vectors")
        return ", ".join(parts)


# A turn the model never answered (Ollama down: failed; quit before the first token: an empty
# interrupted one) is no earlier conversation: it becomes no unit, lends no words to its
# neighbours and is no neighbour — else the question alone is recalled into later prompts and
# listed by conversation search as if it had been discussed. (An imported message without a
# reply is `complete`: what the user said there is kept.)
_ANSWERED = ("{t}.status = 'complete' OR ({t}.status = 'interrupted' "
             "AND trim({t}.answer) != '')")
_TURN_SELECT = (
    "SELECT t.id, t.session_id, s.title, t.question, t.answer, t.created_at "
    f"FROM turns t JOIN sessions s ON s.id = t.session_id WHERE ({_ANSWERED.format(t='t')})"
)
_SESSION_SELECT = (
    "SELECT s.id, s.title, COALESCE(ss.text, '') AS summary, "
    "COALESCE((SELECT MAX(t.created_at) FROM turns t WHERE t.session_id = s.id), "
    "s.updated_at) AS last_at, COALESCE(ss.title, '') FROM sessions s "
    "LEFT JOIN session_summaries ss ON ss.session_id = s.id"
)

# Each turn with the turns just before and after it in its session (None at either end).
_NEIGHBOURS_SELECT = (
    "SELECT t.id, (SELECT p.id FROM turns p WHERE p.session_id = t.session_id AND p.seq < t.seq "
    f"AND ({_ANSWERED.format(t='p')}) ORDER BY p.seq DESC LIMIT 1), (SELECT n.id FROM turns n "
    f"WHERE n.session_id = t.session_id AND n.seq > t.seq AND ({_ANSWERED.format(t='n')}) "
    "ORDER BY n.seq LIMIT 1) FROM turns t"
)


# How many turns on each side of a turn lend it their words (see `documents.turn_doc`).
CONTEXT_TURNS = 1


def _turn_docs(rows: Sequence[Any]) -> list[UnitDoc]:
    """Docs of turns given as whole sessions' rows ordered by session and seq (neighbours are
    part of each turn's keyword text)."""
    said = [said_text(str(r[3]), str(r[4])) for r in rows]
    docs = []
    for i, r in enumerate(rows):
        context = [said[j] for j in range(max(0, i - CONTEXT_TURNS),
                                          min(len(rows), i + CONTEXT_TURNS + 1))
                   if j != i and rows[j][1] == r[1]]
        docs.append(turn_doc(turn_id=int(r[0]), session_id=str(r[1]), title=str(r[2]),
                             question=str(r[3]), answer=str(r[4]), created_at=float(r[5]),
                             context=context))
    return docs


def _vector_doc(doc: UnitDoc) -> VectorDoc:
    return VectorDoc(doc.id, doc.embedding_text, {"session": doc.session_id, "kind": doc.kind})


def _session_docs(rows: Iterable[Any]) -> list[UnitDoc]:
    # A session becomes a unit of its own once it has a summary: "what did we work on last
    # week?" then matches the session, not one of its turns. Dated by its latest turn.
    return [
        summary_doc(session_id=str(r[0]), title=str(r[1]), summary=str(r[2]),
                    created_at=float(r[3]), summary_title=str(r[4]))
        for r in rows
        if str(r[2]).strip()
    ]


class ConversationIndex:
    """Keeps the conversation units of a `SessionStore` indexed; thread-safe."""

    def __init__(
        self,
        store: SessionStore,
        *,
        embedder: Callable[[], Embedder],
        vectors: Callable[[], VectorIndex],
        purge: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self._embedder = Lazy(embedder)
        self._vectors = Lazy(vectors)
        self._lock = threading.RLock()
        # Erasure hook: after a forget, free pages and WAL copies of the erased text are purged
        # (issue 13's no-trace purge plugs in here; until then the FTS merge and secure_delete
        # on the sessions database are what erase it).
        self._purge = purge
        with store.transaction() as conn:
            self.keywords: KeywordIndex = KeywordIndex(conn, KEYWORD_TABLE)
            self.keywords.follow_deletes(UNITS_TABLE)
            if self.keywords.stale:  # the tokenizer changed: re-add every unit's words
                # (a blank text hash makes the next sync rewrite each unit; its vector, whose
                # text did not change, is kept)
                conn.execute(f"UPDATE {UNITS_TABLE} SET text_hash = ''")
                self.keywords.clear()
        # The vectors are derived from the units (the core's write order and repair).
        self._derived = DerivedIndex(
            self.vectors, lambda texts: self.embedder().embed_documents(list(texts)),
            batch=RECONCILE_BATCH)
        self._rows = Rows(ids=self._unit_ids, docs=self._vector_docs)

    # --- plumbing ---------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        return self._embedder.get()

    def vectors(self) -> VectorIndex:
        return self._vectors.get()

    def _unit_ids(self) -> set[str]:
        with self.store.lock:
            return {r[0] for r in self.store.conn.execute(f"SELECT id FROM {UNITS_TABLE}")}

    def _vector_docs(self, unit_ids: Sequence[str]) -> list[VectorDoc]:
        return [_vector_doc(d) for d in self._docs_for(unit_ids)]

    def count(self) -> int:
        with self.store.lock:
            return int(self.store.conn.execute(f"SELECT COUNT(*) FROM {UNITS_TABLE}").fetchone()[0])

    # --- what needs indexing ----------------------------------------------------------------

    def pending(self, session_id: str | None = None) -> list[UnitDoc]:
        """Units missing or out of date (of one session, or all): new turns, their
        neighbours, turns of a renamed session, new or rewritten summaries (the unit's text
        hashes tell)."""
        where, params = ("", ()) if session_id is None else (" WHERE s.id = ?", (session_id,))
        also = where.replace(" WHERE ", " AND ")
        with self.store.lock:
            conn = self.store.conn
            turns = conn.execute(f"{_TURN_SELECT}{also} ORDER BY t.session_id, t.seq",
                                 params).fetchall()
            sessions = conn.execute(f"{_SESSION_SELECT}{where}", params).fetchall()
            units = f"SELECT id, text_hash, vector_hash FROM {UNITS_TABLE}"
            if session_id is not None:
                units += " WHERE session_id = ?"
            hashes = {r[0]: (r[1], r[2]) for r in conn.execute(units, params)}
        docs = _turn_docs(turns) + _session_docs(sessions)
        return [d for d in docs if hashes.get(d.id) != (d.text_hash, d.vector_hash)]

    def docs_for_turns(self, turn_ids: Sequence[int]) -> list[UnitDoc]:
        return self._docs_for([f"t:{i}" for i in turn_ids])

    def _docs_for(self, unit_ids: Sequence[str]) -> list[UnitDoc]:
        wanted = set(unit_ids)
        turn_ids = [int(u[2:]) for u in unit_ids if u.startswith("t:")]
        session_ids = [u[2:] for u in unit_ids if u.startswith("s:")]
        docs: list[UnitDoc] = []
        with self.store.lock:
            conn = self.store.conn
            sessions: set[str] = set()
            for start in range(0, len(turn_ids), 500):
                part = turn_ids[start : start + 500]
                sessions.update(r[0] for r in conn.execute(
                    f"SELECT DISTINCT session_id FROM turns WHERE id IN "
                    f"({','.join('?' * len(part))})", part))
            names = sorted(sessions)
            for start in range(0, len(names), 500):
                part_names = names[start : start + 500]
                rows = conn.execute(
                    f"{_TURN_SELECT} AND t.session_id IN ({','.join('?' * len(part_names))}) "
                    "ORDER BY t.session_id, t.seq", part_names).fetchall()
                docs += [d for d in _turn_docs(rows) if d.id in wanted]
            for start in range(0, len(session_ids), 500):
                names = session_ids[start : start + 500]
                docs += _session_docs(conn.execute(
                    f"{_SESSION_SELECT} WHERE s.id IN ({','.join('?' * len(names))})", names))
        return docs

    # --- writing ----------------------------------------------------------------------------

    def sync(
        self, *, batch_size: int = 128, progress: ProgressCallback | None = None,
        deadline: float | None = None,
    ) -> IndexReport:
        """Index what is missing, drop what was deleted, repair vectors a crash lost. With a
        `deadline` (time.monotonic()), stop after the batch that reaches it: the rest is
        indexed by a later sync (`IndexReport.complete` False)."""
        with self._lock:
            removed, repaired = self.reconcile()
            docs = self.pending()
            done, embedded = self._write_all(docs, batch_size=batch_size, progress=progress,
                                             deadline=deadline)
            return IndexReport(indexed=done, repaired=repaired, removed=removed,
                               complete=done == len(docs), embedded=embedded)

    def _write_all(
        self, docs: Sequence[UnitDoc], *, batch_size: int,
        progress: ProgressCallback | None, deadline: float | None = None,
        reuse: dict[str, str] | None = None,
    ) -> tuple[int, int]:
        """Write `docs` in batches: (units written, vectors computed)."""
        done = embedded = 0
        for start in range(0, len(docs), batch_size):
            if deadline is not None and start and time.monotonic() >= deadline:
                break
            embedded += self.write(docs[start : start + batch_size], reuse=reuse)
            done = min(start + batch_size, len(docs))
            if progress is not None:
                progress(SyncProgress(Phase.indexing, chunks_done=done, chunks_total=len(docs)))
        return done, embedded

    def refresh(self, session_id: str) -> int:
        """Index what changed in one session (a new turn and the neighbour whose keyword text
        it extends, a new summary); the units written."""
        with self._lock:
            docs = self.pending(session_id)
            self.write(docs)
            return len(docs)

    def write(self, docs: Sequence[UnitDoc], *, reuse: dict[str, str] | None = None) -> int:
        """Vectors first, then the units and their keywords in one SQLite transaction; the
        number of vectors computed. A unit whose embedded text is unchanged keeps its vector
        (not embedded again): its unit row says so, or `reuse` (unit id → embedded-text hash
        of a vector still in the collection) when the rows were rebuilt."""
        if not docs:
            return 0
        with self.store.lock:
            known = {**(reuse or {}), **self._vector_hashes([d.id for d in docs])}
        changed = [d for d in docs if known.get(d.id) != d.vector_hash]
        self._derived.write([_vector_doc(d) for d in changed], lambda: self._commit(docs))
        return len(changed)

    def _commit(self, docs: Sequence[UnitDoc]) -> None:
        """The units and their keywords, in one SQLite transaction."""
        with self.store.transaction() as conn:
            written: list[UnitDoc] = []
            for doc in docs:
                # An explicit delete (not INSERT OR REPLACE, which skips delete triggers) so a
                # changed unit's old words leave the keyword table.
                conn.execute(f"DELETE FROM {UNITS_TABLE} WHERE id = ?", (doc.id,))
                cur = conn.execute(
                    f"INSERT INTO {UNITS_TABLE} (id, kind, session_id, turn_id, created_at, "
                    "text_hash, vector_hash) SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS "
                    "(SELECT 1 FROM sessions WHERE id = ?) AND (? IS NULL OR EXISTS "
                    "(SELECT 1 FROM turns WHERE id = ?))",
                    (doc.id, doc.kind, doc.session_id, doc.turn_id, doc.created_at,
                     doc.text_hash, doc.vector_hash, doc.session_id, doc.turn_id, doc.turn_id),
                )
                if cur.rowcount:  # the session may have been deleted meanwhile
                    written.append(doc)
            self.keywords.add((d.id, d.keyword_text) for d in written)

    def _vector_hashes(self, unit_ids: Sequence[str]) -> dict[str, str]:
        """The embedded-text hash of each unit that has one ('' = written before they were
        recorded: embedded again when its text changes)."""
        found: dict[str, str] = {}
        for start in range(0, len(unit_ids), 500):
            part = list(unit_ids[start : start + 500])
            found.update((r[0], r[1]) for r in self.store.conn.execute(
                f"SELECT id, vector_hash FROM {UNITS_TABLE} WHERE vector_hash != '' AND id IN "
                f"({','.join('?' * len(part))})", part))
        return found

    def reconcile(self) -> tuple[int, int]:
        """Make Chroma hold exactly the units' vectors: (orphans removed, vectors re-embedded)."""
        with self._lock:
            self._drop_unanswered()
            fixed = self._derived.reconcile(self._rows)
            return fixed.removed, fixed.repaired

    def _drop_unanswered(self) -> None:
        """Units an older version made of turns that got no answer (see _ANSWERED); their
        vectors then go as orphans. Looked for first: a sync that finds none writes nothing."""
        stale = (f"SELECT u.id FROM {UNITS_TABLE} u JOIN turns t ON t.id = u.turn_id "
                 f"WHERE NOT ({_ANSWERED.format(t='t')})")
        with self.store.lock:
            if self.store.conn.execute(f"{stale} LIMIT 1").fetchone() is None:
                return
        with self.store.transaction() as conn:
            conn.execute(f"DELETE FROM {UNITS_TABLE} WHERE id IN ({stale})")

    def _clear(self) -> None:
        """No vectors, no units, no keywords."""
        self.vectors().drop()
        self._vectors.close()  # dropped: the next use opens a new collection
        with self.store.transaction() as conn:
            conn.execute(f"DELETE FROM {UNITS_TABLE}")
            self.keywords.clear()
            self.keywords.optimize()

    def rebuild(self, *, progress: ProgressCallback | None = None,
                batch_size: int = 128) -> IndexReport:
        """Index everything again from the sessions database: every unit and its words are
        written anew; a vector whose text is unchanged is kept (embedding is the slow part),
        every other one computed; vectors of nothing are dropped."""

        def rewrite(present: set[str]) -> tuple[int, int]:
            with self.store.lock:
                recorded = dict(self.store.conn.execute(
                    f"SELECT id, vector_hash FROM {UNITS_TABLE} WHERE vector_hash != ''"))
            reuse = {k: v for k, v in recorded.items() if k in present}
            with self.store.transaction() as conn:
                conn.execute(f"DELETE FROM {UNITS_TABLE}")
                self.keywords.clear()
                self.keywords.optimize()
            docs = self.pending()
            return self._write_all(docs, batch_size=batch_size, progress=progress, reuse=reuse)

        with self._lock:  # (the rewrite makes no unit of an unanswered turn)
            (done, embedded), fixed = self._derived.rebuild(self._rows, rewrite)
            return IndexReport(indexed=done, repaired=fixed.repaired, removed=fixed.removed,
                               embedded=embedded)

    def forget(self, *, vectors: bool = True) -> int:
        """After sessions were deleted: remove their vectors now and merge the keyword segments
        so no token of theirs stays in the database file; returns vectors removed."""
        with self._lock:
            removed = self._derived.remove_orphans(self._rows) if vectors else 0
            with self.store.transaction():
                self.keywords.optimize()
            if self._purge is not None:
                self._purge()
            return removed

    def drop_all(self) -> None:
        """Forget-all: the whole collection and every unit and keyword."""
        with self._lock:
            self._clear()
            if self._purge is not None:
                self._purge()

    # --- reading ----------------------------------------------------------------------------

    def units_between(
        self, since: float | None, until: float | None, *, exclude_session: str | None = None
    ) -> list[str]:
        """Unit ids dated in `[since, until)`, latest first (not those of `exclude_session`)."""
        with self.store.lock:
            return [r[0] for r in self.store.conn.execute(
                f"SELECT id FROM {UNITS_TABLE} WHERE (? IS NULL OR created_at >= ?) "
                "AND (? IS NULL OR created_at < ?) AND session_id IS NOT ? "
                "ORDER BY created_at DESC",
                (since, since, until, until, exclude_session),
            )]

    def dense(self, query_vector: np.ndarray, k: int, ids: Sequence[str] | None) -> list[
            tuple[str, float]]:
        return self.vectors().query(query_vector, k, ids=ids)

    def keyword(self, text: str, k: int, ids: Sequence[str] | None) -> list[tuple[str, float]]:
        with self.store.lock:
            return self.keywords.search(text, k, ids=ids)

    def neighbours(self, unit_ids: Sequence[str]) -> dict[str, list[str]]:
        """For each turn unit, the units of the turns just before and after it in its session
        (the neighbours whose words its keyword text holds); summaries have none."""
        turn_ids = [int(u[2:]) for u in unit_ids if u.startswith("t:")]
        found: dict[str, list[str]] = {}
        with self.store.lock:
            for start in range(0, len(turn_ids), 500):
                part = turn_ids[start : start + 500]
                for turn_id, before, after in self.store.conn.execute(
                        f"{_NEIGHBOURS_SELECT} WHERE t.id IN ({','.join('?' * len(part))})", part):
                    found[turn_unit_id(turn_id)] = [turn_unit_id(n) for n in (before, after)
                                                    if n is not None]
        return found

    def common_terms(self, tokens: Sequence[str]) -> set[str]:
        """Those of the query `tokens` found in nearly every unit (`topic.COMMON_SHARE`)."""
        with self.store.lock:
            return self.keywords.common_terms(tokens, COMMON_SHARE)

    def stored_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self.vectors().get_embeddings(list(ids)) if ids else {}

    def cosines(self, query_vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        if not ids:
            return {}
        stored = self.vectors().get_embeddings(list(ids))
        return {i: float(np.asarray(v, dtype=np.float32) @ query_vector) for i, v in stored.items()}
