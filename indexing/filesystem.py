"""A full disk or a read-only filesystem, said as what it is.

SQLite, Chroma and diskcache report these in their own words ("database or disk is full",
"attempt to write a readonly database", "(code: 13)"), often wrapped in an error that
suggests damage. `full_or_read_only(exc, path)` recognises them anywhere in the exception's
chain and names the filesystem (its mount point and type), so the user is told to free space
or remount, never to move a healthy store aside.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

_FULL = re.compile(r"disk is full|no space left|code: 13\)|SQLITE_FULL|quota exceeded",
                   re.IGNORECASE)
_READ_ONLY = re.compile(r"readonly database|read-only file system|code: 8\)|SQLITE_READONLY",
                        re.IGNORECASE)


def full_or_read_only(exc: BaseException, path: str | os.PathLike[str]) -> str | None:
    """'the filesystem at /home (ext4) is full' (or 'is read-only') when `exc` or one of its
    causes says so; None otherwise."""
    kind = _kind(exc)
    if kind is None and _unopenable(exc) and _is_read_only(Path(path)):
        kind = "read-only"
    if kind is None:
        return None
    mount, fstype = mount_of(Path(path))
    return f"the filesystem at {mount}{f' ({fstype})' if fstype else ''} is {kind}"


def _kind(exc: BaseException) -> str | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        if isinstance(current, OSError) and current.errno == errno.EROFS:
            return "read-only"
        text = str(current)
        if _FULL.search(text):
            return "full"
        if _READ_ONLY.search(text):
            return "read-only"
        current = current.__cause__ or current.__context__
    return None


def can_write(directory: Path) -> bool:
    """Whether this process may create files in `directory` (False on a read-only mount, or
    a folder it may only read): the reads that also write (a search's log entry) skip that
    part there, and SQLite databases are opened read-only (indexing/sqlite_db.py)."""
    return os.access(_existing(directory), os.W_OK)


def _unopenable(exc: BaseException) -> bool:
    return "unable to open database file" in str(exc) or (
        isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM))


def _is_read_only(path: Path) -> bool:
    existing = _existing(path)
    try:
        return bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def mount_of(path: Path) -> tuple[Path, str]:
    """The mount point holding `path` and its filesystem type ('' when unknown)."""
    current = _existing(path)
    try:
        device = current.stat().st_dev
        while current != current.parent and current.parent.stat().st_dev == device:
            current = current.parent
    except OSError:
        return current, ""
    fstype = ""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) >= 3 and fields[1].replace("\\040", " ") == str(current):
                    fstype = fields[2]
    except OSError:
        pass
    return current, fstype
