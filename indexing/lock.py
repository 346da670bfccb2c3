"""An exclusive, cross-process lock for writers of one knowledge index.

`fcntl.flock` on a file next to the database: released by the kernel when the holder dies (even
by SIGKILL), so a crashed sync never leaves a stale lock behind. The holder's PID is written into
the file so a waiting process can say who is busy.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from indexing.errors import HintedError


class IndexBusy(HintedError):
    """Another process (or thread) is updating the index."""

    def __init__(self, path: Path, pid: int | None) -> None:
        who = f"PID {pid}" if pid else "another process"
        super().__init__(
            f"the index is being updated by {who}; try again when it finishes ({path})",
            "wait for the other `brain index` (or the app's live sync) to finish",
        )
        self.pid = pid


class IndexLock:
    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        # flock conflicts between two fds of one process too, but the fd slot is shared: one
        # thread at a time.
        self._thread_lock = threading.Lock()

    def holder(self) -> int | None:
        try:
            text = self.path.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def acquire(self) -> None:
        deadline = time.monotonic() + self.timeout
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise IndexBusy(self.path, os.getpid())
        try:
            self._acquire_file(deadline)
        except BaseException:
            self._thread_lock.release()
            raise

    def _acquire_file(self, deadline: float) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        delay = 0.02
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise IndexBusy(self.path, self.holder()) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._thread_lock.release()

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
