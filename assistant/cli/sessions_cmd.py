"""`brain sessions list|show|export|rename|rm`: saved conversations."""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.cli.common import context, print_json
from assistant.errors import UserError

if TYPE_CHECKING:
    from assistant.chat.sessions import SessionStore
    from assistant.chat.turn import Session, Turn


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list, show, export, rename or delete saved chats")
    actions = p.add_subparsers(dest="sessions_action", metavar="ACTION")

    ls = actions.add_parser("list", help="saved sessions, most recent first")
    ls.add_argument("--limit", type=int, metavar="N", help="show at most N sessions")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=_list)

    show = actions.add_parser("show", help="print a session's turns")
    show.add_argument("id", metavar="ID", help="session id (or a unique prefix)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=_show)

    export = actions.add_parser("export", help="a session as Markdown, with cited sources")
    export.add_argument("id", metavar="ID", help="session id (or a unique prefix)")
    export.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="write to FILE instead of stdout")
    export.add_argument("--all-sources", action="store_true",
                        help="list every retrieved source, not only the cited ones")
    export.set_defaults(func=_export)

    rename = actions.add_parser("rename", help="give a session a title")
    rename.add_argument("id", metavar="ID", help="session id (or a unique prefix)")
    rename.add_argument("title", nargs="+", metavar="TITLE")
    rename.set_defaults(func=_rename)

    rm = actions.add_parser("rm", help="delete sessions (their turns and saved sources)")
    rm.add_argument("ids", nargs="+", metavar="ID", help="session ids (or unique prefixes)")
    rm.set_defaults(func=_rm)


def _store(args: argparse.Namespace) -> SessionStore:
    from assistant.chat.service import open_sessions

    return open_sessions(context(args))


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def session_json(session: Session) -> dict[str, Any]:
    return {
        "id": session.id,
        "title": session.title,
        "created_at": _iso(session.created_at),
        "updated_at": _iso(session.updated_at),
        "model": session.model,
        "turns": session.turn_count,
        "summary": session.summary,
    }


def turn_json(turn: Turn) -> dict[str, Any]:
    return {
        "seq": turn.seq,
        "question": turn.question,
        "answer": turn.answer,
        "status": turn.status,
        "error": turn.error,
        "model": turn.model,
        "created_at": _iso(turn.created_at),
        "low_confidence": turn.low_confidence,
        "truncated": turn.truncated,  # stopped at the model's length limit
        "sources": [
            {"n": s.n, "cited": s.cited, "chunk_id": s.item.chunk_id, "source": s.item.source,
             "heading": s.item.heading, "start_line": s.item.start_line,
             "end_line": s.item.end_line, "page": s.item.page, "score": s.item.score}
            for s in turn.sources
        ],
        "memories": [
            {"id": m.memory_id, "type": m.kind, "text": m.text, "score": m.score}
            for m in turn.memories
        ],
        "tools": [
            {"name": t.name, "arguments": t.arguments, "result": t.result, "ok": t.ok}
            for t in turn.tools
        ],
        "timings": turn.timings,
    }


def _list(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be at least 1, got {args.limit}")
    with closing(_store(args)) as store:
        sessions = store.list(limit=args.limit)
    if args.json:
        print_json({"sessions": [session_json(s) for s in sessions]})
        return 0
    if not sessions:
        print('no sessions yet: start one with `brain ask "…"` or the terminal UI')
        return 0
    for s in sessions:
        turns = f"{s.turn_count} turn{'s' if s.turn_count != 1 else ''}"
        print(f"{s.id}  {_when(s.updated_at)}  {turns:>9}  {s.title or '(untitled)'}")
    return 0


def _show(args: argparse.Namespace) -> int:
    with closing(_store(args)) as store:
        session = store.resolve(args.id)
        turns = store.turns(session.id)
    if args.json:
        print_json({"session": session_json(session), "turns": [turn_json(t) for t in turns]})
        return 0
    print(f"{session.title or '(untitled)'}  [{session.id}]  {session.model}")
    if session.summary:
        print(f"\nSummary of earlier turns: {session.summary}")
    for turn in turns:
        print(f"\n[{turn.seq}] you: {turn.question}")
        answer = turn.answer or ""
        suffix = {"interrupted": " (interrupted)",
                  "failed": f" (failed: {turn.error})"}.get(turn.status, "")
        if turn.truncated:
            suffix += " (cut off at the length limit)"
        print(f"    assistant: {answer}{suffix}")
        for s in turn.citations:
            print(f"    [{s.n}] {s.item.location}" + (f" — {s.item.heading}"
                                                       if s.item.heading else ""))
    return 0


def _export(args: argparse.Namespace) -> int:
    from assistant.chat.export import session_markdown

    with closing(_store(args)) as store:
        session = store.resolve(args.id)
        text = session_markdown(session, store.turns(session.id), all_sources=args.all_sources)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    path: Path = args.output.expanduser()
    if path.is_dir():
        raise UserError(f"{path} is a folder", hint="give a file name, e.g. chat.md")
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
    print(f"exported session {session.id} ({session.turn_count} turns) to {path}",
          file=sys.stderr)
    return 0


def _rename(args: argparse.Namespace) -> int:
    with closing(_store(args)) as store:
        session = store.resolve(args.id)
        renamed = store.rename(session.id, " ".join(args.title))
    print(f"{renamed.id}  {renamed.title}")
    return 0


def _rm(args: argparse.Namespace) -> int:
    with closing(_store(args)) as store:
        # Resolve all first: a typo in the third id must not leave the first two deleted.
        sessions = [store.resolve(ref) for ref in args.ids]
        for session in {s.id: s for s in sessions}.values():
            store.delete(session.id)
            print(f"deleted session {session.id} ({session.turn_count} turns) "
                  f"{session.title or ''}".rstrip())
    return 0
