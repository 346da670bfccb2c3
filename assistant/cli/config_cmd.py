"""`brain config path|show|edit`."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess

from assistant.cli.common import context
from assistant.config import load_config, render_config
from assistant.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("config", help="show or edit the configuration file")
    actions = parser.add_subparsers(dest="config_action", metavar="ACTION")
    actions.add_parser("path", help="print the config file's path").set_defaults(func=_path)
    actions.add_parser("show", help="print the settings in effect").set_defaults(func=_show)
    actions.add_parser("edit", help="open the config file in $EDITOR").set_defaults(func=_edit)


def _path(args: argparse.Namespace) -> int:
    print(context(args).paths.config_file)
    return 0


def _show(args: argparse.Namespace) -> int:
    ctx = context(args)
    print(f"# {ctx.paths.config_file}")
    print(render_config(ctx.config, commented=False), end="")
    return 0


def _edit(args: argparse.Namespace) -> int:
    ctx = context(args)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    path = ctx.paths.config_file
    try:
        subprocess.run([*shlex.split(editor), str(path)], check=False)
    except FileNotFoundError as exc:
        raise UserError(f"cannot start editor {editor!r}", hint="set $EDITOR") from exc
    load_config(path)  # report a broken edit right away, with the key and expected type
    print(f"{path}: OK")
    return 0
