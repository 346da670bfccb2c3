"""What follows a `brain ask` answer: the rolling summary, memory extraction from the
exchange and the session summary — model calls that take as long as an answer on a laptop.

By default `ask` prints its answer, exits, and leaves this work to a detached `brain sessions
finish ID` (its own session, stdin/stdout/stderr on /dev/null: it never holds the terminal,
and a Ctrl-C in the shell does not reach it). Whatever it cannot do stays pending, and the
next idle moment of any brain process (the terminal UI's idle extraction, the next `ask`'s
finish) picks it up from the stored turns. `ask --wait` runs the same work in the foreground.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import TYPE_CHECKING

from indexing.errors import log_failure

if TYPE_CHECKING:
    from assistant.chat.engine import ChatEngine

log = logging.getLogger(__name__)


def finish_command(session_id: str, *, home: str | None, memory: bool) -> list[str]:
    """The argv of the detached run (this interpreter, so the same install and venv)."""
    argv = [sys.executable, "-m", "assistant.cli.main"]
    if home is not None:
        argv += ["--home", home]
    argv += ["sessions", "finish", session_id]
    if not memory:
        argv.append("--no-memory")
    return argv


def start_detached(argv: list[str]) -> bool:
    """Start `argv` as a background process that outlives this one and never touches the
    terminal. False (and a log line) when it could not start: the work stays pending."""
    try:
        subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
        )
    except OSError:
        log.warning("could not start the background session finish", exc_info=True)
        return False
    return True


async def end_session(engine: ChatEngine, *, memory: bool,
                      notify: bool = True) -> None:
    """The process ending is the end of the session: let the rolling summary finish (so a
    later `--continue` finds the session folded), run memory extraction over the turns not
    extracted yet (unless `memory` is off), then summarise the session. Each bounded by the
    request timeout; a failure is a note on stderr (when `notify`) and never an exit code."""
    timeout = engine.settings.timeout
    await engine.catch_up(timeout=timeout)
    if memory and engine.memory is not None:
        reason = await _extract(engine, timeout)
        if reason is not None and notify:
            print(f"note: memory extraction failed ({reason}); nothing new was remembered, "
                  "the session's turns are tried again later (when it continues, or at the "
                  "terminal UI's next idle moment)", file=sys.stderr, flush=True)
    else:
        await engine.drain(timeout=timeout)
    try:
        await asyncio.wait_for(engine.summarize(timeout=timeout), timeout + 5)
    except Exception:  # a summary must never fail the command
        log.info("session summary at the end of ask failed", exc_info=True)
    try:  # those requests replaced the conversation in Ollama's cache: a next `ask -c`
        # then reads only what is new (see ChatEngine.keep_cached)
        await asyncio.wait_for(engine.keep_cached(timeout=timeout), timeout + 5)
    except Exception:  # never fails the command
        log.info("re-reading the conversation at the end of ask failed", exc_info=True)


async def _extract(engine: ChatEngine, timeout: float) -> str | None:
    """None when extraction went through, else why not."""
    try:
        ok = await asyncio.wait_for(engine.finish(timeout=timeout), timeout)
    except TimeoutError:
        return f"timed out after {timeout:g} s"
    except Exception as exc:  # extraction must never fail the command
        log_failure(log, "memory extraction at the end of ask failed", exc, level=logging.INFO)
        return str(exc) or type(exc).__name__
    return None if ok else "the model's reply was unusable"
