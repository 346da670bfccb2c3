"""Removals as intents: what a removal will erase is on disk before anything is erased.

A removal writes its intent (one JSON file in `<data>/removals/`, written to a temporary name,
fsync'd, renamed, the directory fsync'd), erases, then deletes the file. Killed or starved of
disk space in between, the file stays, and the next command finishes the erasure before it
does anything else (`finish_pending`): a removal either completes or is completed later, never
"unregistered with traces".

The process doing an erasure holds an exclusive `flock` on its intent file, so another process
that finds the file waits for it instead of erasing the same things at the same time; an intent
whose file was unlinked meanwhile is done.

The file holds what the erasers need (paths, ids, texts of removed memories): it is deleted
with the erasure, and a deleted file's bytes are not under the home any more.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DIR_NAME = "removals"


@dataclass(frozen=True, slots=True)
class Intent:
    kind: str  # "folder", "memory", "all-memories", "sessions", "all-sessions"
    what: str  # for people: "folder /home/me/notes", "memory 1a2b3c4d"
    data: dict[str, Any]
    path: Path | None = None  # its file, once recorded


def intents_dir(data_dir: Path) -> Path:
    return data_dir / DIR_NAME


@contextlib.contextmanager
def recorded(data_dir: Path, intent: Intent) -> Iterator[Intent]:
    """Write `intent` durably and hold its lock while the caller erases (raises OSError, e.g.
    ENOSPC, before anything was erased). The lock is taken before the file gets its name, so
    no other process can pick up a removal that is still being carried out."""
    directory = intents_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
    final = directory / name
    tmp = directory / f".{name}.tmp"
    body = json.dumps({"kind": intent.kind, "what": intent.what, "data": intent.data},
                      ensure_ascii=False).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.replace(tmp, final)
            _fsync_dir(directory)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        yield Intent(intent.kind, intent.what, intent.data, final)
    finally:
        os.close(fd)


def clear(intent: Intent) -> None:
    if intent.path is None:
        return
    intent.path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        _fsync_dir(intent.path.parent)


def pending(data_dir: Path) -> list[Intent]:
    """The recorded intents, oldest first (a file that cannot be parsed is skipped: it can
    only be a torn temporary, and those are never renamed into place)."""
    directory = intents_dir(data_dir)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json")
                       and not n.startswith("."))
    except OSError:  # none recorded (no data dir yet), or a data dir that cannot be read
        return []
    found: list[Intent] = []
    for name in names:
        path = directory / name
        try:
            raw = json.loads(path.read_bytes())
        except FileNotFoundError:
            continue  # finished meanwhile by another process
        except (OSError, ValueError):
            continue
        if isinstance(raw, dict) and isinstance(raw.get("data"), dict):
            found.append(Intent(str(raw.get("kind")), str(raw.get("what")), raw["data"], path))
    return found


@contextlib.contextmanager
def held(intent: Intent) -> Iterator[bool]:
    """Hold the intent's lock; yields False when it is done already (finished and removed by
    the process that held it before us), True when the erasure is ours to do."""
    if intent.path is None:
        yield True
        return
    try:
        fd = os.open(intent.path, os.O_RDONLY)
    except FileNotFoundError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield os.fstat(fd).st_nlink > 0
    finally:
        os.close(fd)  # releases the lock


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- receipts: a finished removal, so that running it again is accepted -----------------------

RECEIPTS = "done.receipts"  # not *.json: never read as an intent
KEEP_RECEIPTS = 200


def receipt_key(kind: str, key: str, salt: str) -> str:
    """Ids (memories, sessions) are random and say nothing: kept as they are, so a prefix
    still matches. A folder's path is kept only as a salted digest."""
    if kind != "folder":
        return key
    return "sha256:" + hashlib.sha256(f"{salt}\0{key}".encode("utf-8", "surrogatepass")
                                      ).hexdigest()


def _receipts(data_dir: Path) -> dict[str, Any]:
    try:
        raw = json.loads((intents_dir(data_dir) / RECEIPTS).read_bytes())
    except (OSError, ValueError):
        raw = None
    if not isinstance(raw, dict) or not isinstance(raw.get("done"), list):
        return {"salt": uuid.uuid4().hex, "done": []}
    return raw


def note_done(data_dir: Path, kind: str, keys: list[str]) -> None:
    """Remember that these removals are complete (best effort: without the receipt a re-run
    is refused as naming something unknown, and nothing else is lost)."""
    with contextlib.suppress(OSError):
        receipts = _receipts(data_dir)
        done = [d for d in receipts["done"] if isinstance(d, list) and len(d) == 2]
        done += [[kind, receipt_key(kind, key, receipts["salt"])] for key in keys]
        receipts["done"] = done[-KEEP_RECEIPTS:]
        directory = intents_dir(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".{RECEIPTS}.tmp"
        tmp.write_text(json.dumps(receipts), encoding="utf-8")
        os.replace(tmp, directory / RECEIPTS)


def done_before(data_dir: Path, kind: str, key: str, *, prefix: bool = False) -> str | None:
    """The key of a completed removal of this kind matching `key` (for ids, `prefix` lets a
    short id match, as everywhere else); None when there is none."""
    receipts = _receipts(data_dir)
    wanted = receipt_key(kind, key, receipts["salt"])
    for entry in reversed(receipts["done"]):
        if not isinstance(entry, list) or len(entry) != 2 or entry[0] != kind:
            continue
        found = str(entry[1])
        if found == wanted or (prefix and key and found.startswith(key)):
            return found
    return None
