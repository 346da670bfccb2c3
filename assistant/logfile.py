"""The one log file: `<data dir>/logs/brain.log`, private, rotating, shared by every process.

The CLI and the TUI install it at start (`install_log`); every module logs through
`logging.getLogger(__name__)` as before and the records of the `assistant`, `indexing` and `tui`
loggers (INFO and up) and everyone's warnings land here, each line naming the process (`cli
search`, `tui`) and its pid, so two processes writing at once stay readable. Nothing is created
until the first record: `brain --help` or a clean `brain search` leave no file behind.

Why a file and not stderr: the TUI owns the terminal, and the CLI's stderr is for the one-line
errors users read. A failure that is a bug (not a `HintedError`) leaves its traceback here, and
the message the user sees names the file (`log_hint()`).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import TextIO

from assistant.paths import AppPaths, ensure_private_dir

LOG_NAME = "brain.log"
# 1 MiB a file, 3 old ones kept: weeks of normal use, bounded on disk.
MAX_BYTES = 1 << 20
BACKUPS = 3
OWN_LOGGERS = ("assistant", "indexing", "tui")
FORMAT = "%(asctime)s %(process)d %(brain_process)s %(levelname)s %(name)s: %(message)s"

# `log.warning(..., extra=TO_USER)`: also on the terminal (stderr), message only.
TO_USER = {"to_user": True}

_installed: Path | None = None
_lock = threading.Lock()


def log_file(paths: AppPaths) -> Path:
    return paths.log_dir / LOG_NAME


def installed_log() -> Path | None:
    """The file this process logs to, if `install_log` ran."""
    return _installed


def log_hint() -> str:
    """What to tell the user next to a bug report."""
    where = _installed
    if where is None:
        return "please report it"
    return f"the traceback is in {where}; please report it with that file"


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """Creates its directory (0700) and file (0600) at the first record, and never lets a
    logging failure (read-only home, full disk) reach the user's command."""

    def _open(self):  # type: ignore[no-untyped-def]  # typeshed: returns a TextIOWrapper
        ensure_private_dir(Path(self.baseFilename).parent)
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors="backslashreplace")

    def handleError(self, record: logging.LogRecord) -> None:
        # A log that cannot be written must not turn a working command into a failing one.
        return


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]  # typeshed: generic stream
    """The records meant for the user as well (`log.warning(..., extra=TO_USER)`, e.g.
    "recalling memories by keywords only…", which `logging.lastResort` used to print before the
    root had a handler): message only, on the current `sys.stderr` (read at each record, so
    the CLI's sanitising wrapper and the TUI's capture apply). Everything else, tracebacks too,
    stays in the file: commands say their own one-line notes."""

    def __init__(self) -> None:
        super().__init__()
        self.setLevel(logging.WARNING)
        self.addFilter(lambda record: bool(getattr(record, "to_user", False)))

    @property
    def stream(self) -> TextIO:  # StreamHandler's attribute, made dynamic
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass

    def format(self, record: logging.LogRecord) -> str:
        return record.getMessage()


class _ProcessName(logging.Filter):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.process_name = name

    def filter(self, record: logging.LogRecord) -> bool:
        record.brain_process = self.process_name
        return True


def install_log(paths: AppPaths, process: str) -> Path:
    """Send this process's log records to the shared log file; returns its path.

    Idempotent (a second call only renames the process). Uncaught exceptions in the main
    thread and in any other thread are logged with their traceback before the usual report.
    """
    global _installed
    with _lock:
        target = log_file(paths)
        root = logging.getLogger()
        for handler in root.handlers:
            if isinstance(handler, _PrivateRotatingHandler):
                for f in handler.filters:
                    if isinstance(f, _ProcessName):
                        f.process_name = process
                return Path(handler.baseFilename)
        handler = _PrivateRotatingHandler(str(target), maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                          encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter(FORMAT))
        handler.addFilter(_ProcessName(process))
        handler.setLevel(logging.INFO)
        root.addHandler(handler)
        root.addHandler(_Stderr())
        if root.level > logging.WARNING or root.level == logging.NOTSET:
            root.setLevel(logging.WARNING)
        for name in OWN_LOGGERS:
            own = logging.getLogger(name)
            if own.level == logging.NOTSET or own.level > logging.INFO:
                own.setLevel(logging.INFO)
        _hook_uncaught()
        _installed = target
        return target


def _hook_uncaught() -> None:
    previous = sys.excepthook
    previous_thread = threading.excepthook

    def main_hook(kind: type[BaseException], exc: BaseException,
                  tb: TracebackType | None) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            logging.getLogger("assistant").critical("uncaught exception", exc_info=(kind, exc, tb))
        previous(kind, exc, tb)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is not SystemExit and args.exc_value is not None:
            logging.getLogger("assistant").error(
                "uncaught exception in thread %s", getattr(args.thread, "name", "?"),
                exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
        previous_thread(args)

    sys.excepthook = main_hook
    threading.excepthook = thread_hook


def tail(path: Path, *, max_bytes: int = 256 * 1024) -> list[str]:
    """The last lines of a log file (at most `max_bytes` of it), oldest first; [] if none."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return []
    lines = data.decode("utf-8", "replace").splitlines()
    if size > max_bytes and lines:
        lines = lines[1:]  # the first line was cut by the seek
    return lines



def recent_errors(path: Path, *, now: float | None = None, hours: float = 24) -> list[str]:
    """The ERROR/CRITICAL lines of the log written in the last `hours`, oldest first, each as
    "<time> <logger>: <message>" (the traceback lines that follow a record are left out)."""
    import time
    from datetime import datetime

    cutoff = (time.time() if now is None else now) - hours * 3600
    found = []
    for line in tail(path):
        parts = line.split(" ", 6)
        # "<date> <time,ms> <pid> <process…> <LEVEL> <logger>: <message>": the process name
        # may hold a space ("cli search"), so find the level by value.
        level_at = next((i for i, p in enumerate(parts) if p in ("ERROR", "CRITICAL")), None)
        if level_at is None or level_at < 3:
            continue
        try:
            stamp = datetime.strptime(f"{parts[0]} {parts[1]}", "%Y-%m-%d %H:%M:%S,%f")
        except ValueError:
            continue
        if stamp.timestamp() >= cutoff:
            found.append(f"{parts[0]} {parts[1][:8]} {' '.join(parts[level_at + 1:])}")
    return found
