"""`brain`: the command line over the same core the TUI uses.

Exit codes: 0 success, 1 user error (bad input, missing data, failing check), 2 usage error.
Each command group lives in its own module with `register(subparsers)`; handlers take the
parsed args and an AppContext and return an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import logging
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence

from assistant import __version__
from assistant.cli.common import refuse_empty_values
from assistant.errors import HintedError, UserError
from assistant.paths import apply_private_umask

log = logging.getLogger("assistant.cli")

# Command modules, in `--help` order. Each defines `register(subparsers) -> None`.
COMMAND_MODULES: tuple[str, ...] = (
    "assistant.cli.index_cmd",
    "assistant.cli.folders_cmd",
    "assistant.cli.search_cmd",
    "assistant.cli.ask_cmd",
    "assistant.cli.memory_cmd",
    "assistant.cli.sessions_cmd",
    "assistant.cli.events_cmd",
    "assistant.cli.mcp_cmd",
    "assistant.cli.log_cmd",
    "assistant.cli.eval_cmd",
    "assistant.cli.config_cmd",
    "assistant.cli.doctor_cmd",
)

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="brain",
        description="second-brain: private, offline chat over your own notes, docs and code, "
        "with a memory you can see and correct. Without a command, opens the terminal UI.",
    )
    parser.add_argument("--version", action="version", version=f"second-brain {__version__}")
    parser.add_argument(
        "--home",
        metavar="DIR",
        help="keep config, data and cache under DIR (also: $BRAIN_HOME)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _accept_home_everywhere(sub)
    refuse_empty_values(parser)
    return parser


def _accept_home_everywhere(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Let `--home` also follow the command (`brain doctor --home DIR`), as users type it."""
    for command in sub.choices.values():
        # A command that defines its own --home keeps it.
        with contextlib.suppress(argparse.ArgumentError):
            command.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS,
                                 help="same as `brain --home DIR …`")
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_home_everywhere(action)


def main(argv: Sequence[str] | None = None) -> int:
    apply_private_umask()
    parser = build_parser()
    from assistant.cli.plain_output import plain_output

    with plain_output():  # argparse echoes what was typed (a pasted escape sequence, too)
        args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "func", None)
    _install_log(args)
    if handler is None:
        if args.command is not None:  # a group without its subcommand
            parser.parse_args([*(argv or sys.argv[1:]), "--help"])
        return _run(_run_tui, args)  # Textual draws the screen itself, from plain text (tui/)
    with plain_output():  # stored text is printed as plain text, never obeyed
        return _run(handler, args)


def _run(handler: Handler, args: argparse.Namespace) -> int:
    try:
        _finish_removals(args)
        return handler(args)
    except HintedError as exc:  # every error meant for the user: message and hint
        print(f"brain: error: {_filesystem_problem(exc, args) or _named_damage(exc, args) or exc}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("brain: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `brain search … | head`: the reader went away; not an error worth a traceback.
        sys.stderr.close()
        return 0
    except OSError as exc:
        # Permission denied, disk full, read-only home: the user can fix these; no traceback.
        problem = _filesystem_problem(exc, args)
        if problem:
            print(f"brain: error: {problem}", file=sys.stderr)
            return 1
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"brain: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:
        # SQLite says "unable to open database file" for a read-only or vanished data dir.
        print(f"brain: error: {_database_problem(exc, args)}", file=sys.stderr)
        return 1
    except Exception as exc:
        # A bug: its traceback goes to the log file, the user gets one line saying where.
        from assistant.logfile import log_hint

        log.exception("brain %s failed", args.command or "(tui)")
        print(f"brain: internal error: {type(exc).__name__}: {exc}\n  hint: {log_hint()}",
              file=sys.stderr)
        return 1


def _install_log(args: argparse.Namespace) -> None:
    """The shared log file (assistant/logfile.py), named after this command."""
    from assistant.logfile import install_log
    from assistant.paths import resolve_paths

    sub = next((value for name, value in vars(args).items()
                if (name == "action" or name.endswith("_action")) and isinstance(value, str)),
               None)
    command = " ".join(part for part in (args.command, sub) if part)
    with contextlib.suppress(OSError):  # no usable home: the command itself will say so
        install_log(resolve_paths(getattr(args, "home", None)),
                    f"cli {command}" if command else "tui")


def _finish_removals(args: argparse.Namespace) -> None:
    """Before anything else: finish the removals an earlier run recorded but did not finish
    (killed, disk full), so nothing removed is ever shown again. `brain doctor` goes on when
    one cannot be finished (it reports it); any other command stops with the reason."""
    from assistant.erasure.intents import pending
    from assistant.paths import resolve_paths

    if not pending(resolve_paths(getattr(args, "home", None)).data_dir):
        return  # the common case: one directory listing, nothing loaded
    from assistant.context import AppContext
    from assistant.erasure.actions import finish_pending
    from assistant.services import Services

    try:
        # Stores of its own, closed before the command opens its: the removal is finished
        # before anything else reads them.
        with Services(AppContext.load(getattr(args, "home", None))) as core:
            for intent in finish_pending(core):
                print(f"brain: finished an interrupted removal of {intent.what}",
                      file=sys.stderr)
    except HintedError as exc:
        if args.command != "doctor":
            raise
        print(f"brain: warning: {exc}", file=sys.stderr)


def _named_damage(exc: BaseException, args: argparse.Namespace) -> str | None:
    """For an error saying some database is damaged without naming it: which file it is and
    how to recover (assistant/store_health.py); None when that is not the case."""
    from assistant.paths import resolve_paths
    from assistant.store_health import damage_error, looks_like_damage, store_files

    if not looks_like_damage(exc):
        return None
    paths = resolve_paths(getattr(args, "home", None))
    if any(str(store.path) in str(exc) for store in store_files(paths)):
        return None  # it names its file already
    found = damage_error(paths)
    return str(found) if found is not None else None


def _filesystem_problem(exc: BaseException, args: argparse.Namespace) -> str | None:
    """A full disk or a read-only filesystem under the data dir, said as what it is (never as
    damage); None for anything else."""
    from assistant.paths import resolve_paths
    from indexing.filesystem import full_or_read_only

    if isinstance(exc, HintedError) and "the filesystem at" in exc.message:
        return None  # it says so already (e.g. a removal left pending)
    problem = full_or_read_only(exc, resolve_paths(getattr(args, "home", None)).data_dir)
    if problem is None:
        return None
    return (f"{problem} ({_first_line(exc)}); nothing was lost\n  hint: free some space or make "
            "it writable again, then run the command again")


def _first_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, HintedError) else str(exc)
    return (text.strip().splitlines() or [type(exc).__name__])[0][:200]


def _database_problem(exc: sqlite3.Error, args: argparse.Namespace) -> str:
    from assistant.paths import resolve_paths

    named = _filesystem_problem(exc, args) or _named_damage(exc, args)
    if named is not None:
        return named
    data = resolve_paths(getattr(args, "home", None)).data_dir
    if data.is_dir() and not os.access(data, os.W_OK):
        return (f"cannot write to {data}: the data directory is read-only ({exc}); nothing "
                "was changed\n  hint: make it writable again (check the disk or mount), then "
                "run the command again")
    return (f"a database in {data} cannot be used ({exc})\n  hint: check free disk space and "
            "permissions; `brain doctor` checks the data dir")


def _run_tui(args: argparse.Namespace) -> int:
    try:
        from tui.app import run_app
    except ModuleNotFoundError as exc:
        raise UserError(f"the terminal UI is not available: {exc}") from exc
    run_app(home=args.home)  # ends the process (tui/app.py _end_process)


def entry_point() -> None:
    code = main()
    # The process ends now: skip the interpreter's final garbage collection over the whole
    # heap (LlamaIndex, onnxruntime… — seconds under load: 2.3 s of a TUI quit, measured before
    # the TUI ended with os._exit), which frees nothing the OS does not free anyway. atexit
    # handlers and flushing still run.
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry_point()
