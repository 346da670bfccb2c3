"""Open a file of a registered folder, then check what was opened.

The walk classifies a path (regular file, link inside the folder…) and the reader opens it a
moment later: in between, the file (or any folder on its way) can be swapped for a symlink to
something outside. Checking the path before opening can never close that gap; checking the open
descriptor does. `open_inside` opens without blocking (a FIFO swapped in must not hang the sync),
then requires the descriptor to be a regular file whose real location — the kernel's own answer
for that descriptor, not a second lookup by name — lies inside the folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

_PROC_FD = Path("/proc/self/fd")


class OutsideFolder(OSError):
    """What the path led to at open time lies outside the registered folder."""


class NotRegularFile(OSError):
    """What the path led to at open time is not a regular file (FIFO, device, socket…)."""


def open_inside(path: Path, root: Path) -> BinaryIO:
    """`path` opened for reading in binary mode, if it is a regular file inside `root`.

    Raises `OutsideFolder`, `NotRegularFile`, or the `OSError` of the open itself
    (FileNotFoundError, PermissionError…).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
        real = _descriptor_path(fd, path, st)
        real_root = os.path.realpath(root)
        if real is None or not _contains(real_root, real):
            where = f", to {real}" if real is not None else ""
            raise OutsideFolder(f"was replaced by a link pointing outside the folder{where}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _descriptor_path(fd: int, path: Path, st: os.stat_result) -> str | None:
    """Where the open descriptor really is; None when that cannot be known for sure."""
    try:
        real = os.readlink(_PROC_FD / str(fd))
    except OSError:
        real = None
    if real is not None and real.startswith("/"):
        # A file deleted since the open reads "/path (deleted)"; it was inside or outside the
        # folder exactly as that path says.
        return real.removesuffix(" (deleted)")
    # No /proc (macOS, some sandboxes): resolve the name again and accept it only when it
    # names the very file that is open (same device and inode).
    resolved = os.path.realpath(path)
    try:
        again = os.stat(resolved, follow_symlinks=False)
    except OSError:
        return None
    if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
        return None
    return resolved


def _contains(real_root: str, real: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip("/") + "/")
