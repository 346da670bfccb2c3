"""`brain config path|show|edit`."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
from pathlib import Path

from assistant.cli.common import context
from assistant.config_load import load_config
from assistant.config_render import ensure_config_file, render_config, render_markdown
from assistant.errors import UserError
from assistant.paths import resolve_paths


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("config", help="show or edit the configuration file")
    actions = parser.add_subparsers(dest="config_action", metavar="ACTION")
    actions.add_parser("path", help="print the config file's path").set_defaults(func=_path)
    show = actions.add_parser("show", help="print the settings in effect")
    show.add_argument("--markdown", action="store_true",
                      help="as a Markdown table with each setting's meaning")
    show.set_defaults(func=_show)
    actions.add_parser("edit", help="open the config file in $EDITOR").set_defaults(func=_edit)


def _config_file(args: argparse.Namespace) -> Path:
    """The config file, created on first run — without validating it: `path` and `edit` must
    work on a broken config, since they are how the user finds and fixes it."""
    paths = resolve_paths(getattr(args, "home", None)).ensure()
    return ensure_config_file(paths)


def _path(args: argparse.Namespace) -> int:
    print(_config_file(args))
    return 0


def _show(args: argparse.Namespace) -> int:
    ctx = context(args)
    if getattr(args, "markdown", False):
        print(render_markdown(ctx.config), end="")
        return 0
    print(f"# {ctx.paths.config_file}")
    print(render_config(ctx.config, commented=False), end="")
    return 0


def _edit(args: argparse.Namespace) -> int:
    path = _config_file(args)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        subprocess.run([*shlex.split(editor), str(path)], check=False)
    except FileNotFoundError as exc:
        raise UserError(f"cannot start editor {editor!r}", hint="set $EDITOR") from exc
    load_config(path)  # report a broken edit right away, with the key and expected type
    print(f"{path}: OK")
    return 0
