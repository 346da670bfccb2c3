"""The profile's row: written by the user or the model, undone, and emptied when a memory it
was built from changes (`follow_source`). The model's rewrite itself is `profile.py`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from assistant.errors import UserError
from assistant.memory.database import PROFILE_ID, MemoryDatabase
from assistant.memory.errors import NothingToUndo, SecretRejected
from assistant.memory.model import Actor, Event, Profile
from assistant.memory.secrets import find_secret


def read_profile(db: MemoryDatabase) -> Profile:
    with db.lock:
        row = db.conn.execute(
            "SELECT text, updated_at, edited_by_user, pending_text FROM profile WHERE id=1"
        ).fetchone()
    if row is None:
        return Profile(text="", updated_at=None, edited_by_user=False, pending_text=None)
    updated = None if row["updated_at"] is None else float(row["updated_at"])
    return Profile(row["text"], updated, bool(row["edited_by_user"]),
                   row["pending_text"])


def set_profile(db: MemoryDatabase, text: str, *, actor: Actor,
                sources: Sequence[str] | None = None) -> Profile:
    """Write the profile. A model rewrite of a user-edited profile is only proposed.
    `sources`: the memories a model rewrite was built from (see `follow_source`)."""
    text = text.strip()
    finding = find_secret(text)
    if finding:
        raise SecretRejected(f"profile not saved: {finding.message()}")
    current = read_profile(db)
    with db.write() as conn:
        if actor is Actor.ASSISTANT and current.edited_by_user:
            conn.execute("UPDATE profile SET pending_text=? WHERE id=1", (text,))
        else:
            conn.execute(
                "INSERT INTO profile (id, text, updated_at, edited_by_user, pending_text, "
                "sources) VALUES (1,?,?,?,NULL,?) ON CONFLICT(id) DO UPDATE SET "
                "text=excluded.text, updated_at=excluded.updated_at, "
                "edited_by_user=excluded.edited_by_user, pending_text=NULL, "
                "sources=excluded.sources",
                (text, db.now(), int(actor is Actor.USER),
                 None if sources is None or actor is Actor.USER
                 else json.dumps(sorted(sources))),
            )
            conn.execute(
                "INSERT INTO history (memory_id, event, old_text, new_text, actor, at) "
                "VALUES (?,?,?,?,?,?)",
                (PROFILE_ID, (Event.EDIT_BY_USER if actor is Actor.USER else Event.UPDATE)
                 .value, current.text, text, actor.value, db.now()),
            )
    return read_profile(db)


def follow_source(db: MemoryDatabase, conn: sqlite3.Connection, memory_id: str, *,
                  erased: bool) -> None:
    """Derived text follows its source. A memory was edited, deleted (`erased=False`) or
    erased for good: a model-written profile built from it is stale, so it is emptied
    (the next refresh writes a new one; until then no prompt carries the old words), and a
    proposed rewrite is dropped. A profile the user typed is the user's own text and stays.
    An erasure also drops the profile's earlier versions (its undo history), which may
    quote the memory; an edit or delete keeps them, as both can be undone."""
    row = conn.execute(
        "SELECT text, edited_by_user, pending_text, sources FROM profile WHERE id=1"
    ).fetchone()
    if row is None:
        return
    sources = json.loads(row["sources"]) if row["sources"] else None
    used = sources is None or memory_id in sources
    if row["pending_text"] is not None:
        conn.execute("UPDATE profile SET pending_text=NULL WHERE id=1")
    if used and row["text"] and not row["edited_by_user"]:
        conn.execute("UPDATE profile SET text='', sources=NULL, updated_at=? WHERE id=1",
                     (db.now(),))
        if not erased:
            conn.execute(
                "INSERT INTO history (memory_id, event, old_text, new_text, actor, at) "
                "VALUES (?,?,?,?,?,?)",
                (PROFILE_ID, Event.UPDATE.value, row["text"], "", Actor.ASSISTANT.value,
                 db.now()))
    if erased:
        conn.execute("DELETE FROM history WHERE memory_id=?", (PROFILE_ID,))


def undo_profile(db: MemoryDatabase) -> Profile:
    """Put back the profile text from before its latest change."""
    with db.write() as conn:
        row = conn.execute(
            "SELECT seq, old_text FROM history WHERE memory_id=? AND undone=0 "
            "AND event != ? ORDER BY seq DESC LIMIT 1",
            (PROFILE_ID, Event.RESTORE.value),
        ).fetchone()
        if row is None:
            raise NothingToUndo("nothing to undo for the profile")
        current = conn.execute("SELECT text FROM profile WHERE id=1").fetchone()
        conn.execute("UPDATE history SET undone=1 WHERE seq=?", (row["seq"],))
        conn.execute("UPDATE profile SET text=?, updated_at=?, pending_text=NULL WHERE id=1",
                     (row["old_text"] or "", db.now()))
        conn.execute(
            "INSERT INTO history (memory_id, event, old_text, new_text, actor, at, undone) "
            "VALUES (?,?,?,?,?,?,1)",
            (PROFILE_ID, Event.RESTORE.value, current[0] if current else "",
             row["old_text"] or "", Actor.USER.value, db.now()),
        )
    return read_profile(db)


def accept_pending_profile(db: MemoryDatabase) -> Profile:
    pending = read_profile(db).pending_text
    if pending is None:
        raise UserError("there is no proposed profile rewrite to accept")
    with db.write() as conn:
        conn.execute("UPDATE profile SET edited_by_user=0 WHERE id=1")
    return set_profile(db, pending, actor=Actor.ASSISTANT)
