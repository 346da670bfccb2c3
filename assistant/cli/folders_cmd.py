"""`brain folders`: list the indexed folders, or unregister one (`brain folders rm PATH`)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from assistant.cli.common import print_json, services


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "folders",
        help="list indexed folders (or remove one: `brain folders rm PATH`)",
        description="List the registered folders with their file and chunk counts and when "
        "they were last synced.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=list_folders)
    actions = p.add_subparsers(dest="folders_action", metavar="ACTION")
    rm = actions.add_parser(
        "rm",
        help="unregister a folder and delete its chunks from the index",
        description="Unregister a folder and delete its chunks (keyword index and vectors "
        "included); nothing of it remains in any file under the home: cached embeddings go "
        "and chat sessions keep their turns with the source marked removed. The files "
        "themselves are not touched.",
    )
    rm.add_argument("path", metavar="PATH")
    rm.add_argument("--json", action="store_true", help="print the result as JSON")
    rm.set_defaults(func=remove_folder)


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat(timespec="seconds")


def list_folders(args: argparse.Namespace) -> int:
    with services(args) as core:
        folders = core.light_knowledge().folders()
    if args.json:
        print_json(
            {
                "folders": [
                    {
                        "path": f.path,
                        "files": f.files,
                        "chunks": f.chunks,
                        "last_sync": _iso(f.last_sync),
                    }
                    for f in folders
                ]
            }
        )
        return 0
    if not folders:
        print("No folders indexed yet. Add one with `brain index PATH`.")
        return 0
    rows = [
        (
            f.path,
            str(f.files),
            str(f.chunks),
            f.last_sync.astimezone().strftime("%Y-%m-%d %H:%M") if f.last_sync else "never",
        )
        for f in folders
    ]
    header = ("FOLDER", "FILES", "CHUNKS", "LAST SYNC")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        print(
            f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}"
        )
    total_files = sum(f.files for f in folders)
    total_chunks = sum(f.chunks for f in folders)
    print(f"{len(folders)} folder(s), {total_files} files, {total_chunks} chunks")
    sys.stdout.flush()
    return 0


def remove_folder(args: argparse.Namespace) -> int:
    from assistant.erasure.actions import remove_folder as erase_folder

    with services(args) as core:
        removed = erase_folder(core, args.path)
    if args.json:
        print_json({"removed": removed.path, "files": removed.files, "chunks": removed.chunks,
                    "earlier": removed.earlier})
    elif removed.earlier:
        print(f"{removed.path} was removed from the index earlier; nothing of it is left.")
    else:
        print(
            f"Removed {removed.path} from the index: {removed.files} files, "
            f"{removed.chunks} chunks deleted (the files themselves are untouched)."
        )
    return 0
