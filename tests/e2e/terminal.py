"""Drive a real program in a real pseudo-terminal (tmux) and read its screen.

tmux gives the program a genuine tty of a fixed size (160×48 here), so Textual renders exactly as
for a user; `capture-pane -p` returns the screen as text. Every wait polls the screen with a
deadline — never a fixed sleep. A tiny shell wrapper writes the program's exit status to a file
(tmux itself sometimes never reaps the pane's process and so cannot tell the status), and
`remain-on-exit` keeps the last screen readable after the program ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

WIDTH, HEIGHT = 160, 48
SESSION = "e2e"


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


class Terminal:
    """One tmux server (own socket) running one program."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        # A short socket path: AF_UNIX paths are limited to ~107 bytes.
        self._dir = Path(tempfile.mkdtemp(prefix="tmx"))
        self.socket = self._dir / "s"
        self._status_file = self._dir / "status"
        self.argv = list(argv)
        env_args: list[str] = []
        for key, value in (env or {}).items():
            env_args += ["-e", f"{key}={value}"]
        # The server and thus the program inherit this process's environment (+ env).
        self._tmux("new-session", "-d", "-s", SESSION, "-x", str(WIDTH), "-y", str(HEIGHT),
                   *env_args, *(["-c", str(cwd)] if cwd else []),
                   # remain-on-exit must be set before the program can exit: the shell waits
                   # for a go-ahead line, then runs the program and records its status.
                   "sh", "-c", 'read _go; "$@"; echo $? > "$0"', str(self._status_file),
                   *self.argv)
        self._tmux("set-option", "-t", SESSION, "remain-on-exit", "on")
        self._tmux("send-keys", "-t", SESSION, "Enter")

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True,
                              text=True, timeout=20)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", SESSION)

    def send(self, *keys: str) -> None:
        """tmux key names ("Enter", "C-q", "F3") or literal text (sent with -l)."""
        for key in keys:
            if re.fullmatch(r"(Enter|Escape|Tab|BTab|BSpace|Up|Down|Left|Right|F\d+|[CM]-\w)", key):
                self._tmux("send-keys", "-t", SESSION, key)
            else:
                self._tmux("send-keys", "-t", SESSION, "-l", key)

    def type_line(self, text: str) -> None:
        self.send(text, "Enter")

    def wait_for(self, condition: str | re.Pattern[str] | Callable[[str], object], *,
                 timeout: float = 30.0, what: str = "") -> str:
        """Poll the screen until `condition` (substring, regex or predicate) holds."""
        if isinstance(condition, str):
            needle = condition
            check: Callable[[str], object] = lambda s: needle in s  # noqa: E731
        elif isinstance(condition, re.Pattern):
            pattern = condition
            check = lambda s: pattern.search(s)  # noqa: E731
        else:
            check = condition
        deadline = time.monotonic() + timeout
        screen = ""
        while True:
            if self.exit_status() is not None:
                screen = self.screen()
                if check(screen):
                    return screen
                raise AssertionError(
                    f"program exited (status {self.exit_status()}) while waiting for "
                    f"{what or condition!r}; screen:\n{screen}"
                )
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout} s waiting for {what or condition!r}; "
                    f"screen:\n{screen}"
                )
            time.sleep(0.1)

    def exit_status(self) -> int | None:
        """The program's exit status (128+N after signal N, as sh reports it), None if running."""
        try:
            text = self._status_file.read_text().strip()
        except FileNotFoundError:
            return None
        return int(text) if text else None

    def wait_exit(self, timeout: float = 30.0, *, poll: float = 0.1) -> int:
        """The exit status, once the program has ended (checked every `poll` seconds: a test
        timing the exit polls finely)."""
        deadline = time.monotonic() + timeout
        while (status := self.exit_status()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"program still running after {timeout} s:\n{self.screen()}")
            time.sleep(poll)
        return status

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._tmux("kill-server")
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def region(screen: str, start: int, end: int | None = None) -> str:
    """The columns [start, end) of every line: one pane of a side-by-side layout."""
    return "\n".join(line[start:end] for line in screen.splitlines())


def env_without(names: Sequence[str]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}
