"""`brain sessions list|show|export|rename|rm|search|import|reindex`: saved conversations."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.cli.common import plural, positive_int, print_json, services, top_k
from assistant.errors import UserError
from assistant.plain_text import plain

if TYPE_CHECKING:
    from assistant.sessions.turn import Session, Turn


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("sessions", help="list, show, export, rename or delete saved chats")
    actions = p.add_subparsers(dest="sessions_action", metavar="ACTION")

    ls = actions.add_parser("list", help="saved sessions, most recent first")
    ls.add_argument("--limit", type=positive_int, metavar="N", help="show at most N sessions")
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
                        help="list every retrieved source and earlier conversation, not only the "
                        "cited ones")
    export.set_defaults(func=_export)

    rename = actions.add_parser("rename", help="give a session a title")
    rename.add_argument("id", metavar="ID", help="session id (or a unique prefix)")
    rename.add_argument("title", nargs="+", metavar="TITLE")
    rename.set_defaults(func=_rename)

    rm = actions.add_parser("rm", help="delete sessions (their turns and saved sources)")
    rm.add_argument("ids", nargs="+", metavar="ID", help="session ids (or unique prefixes)")
    rm.set_defaults(func=_rm)

    search = actions.add_parser(
        "search", help="search every past conversation by meaning, words and date",
        description="Hybrid search (meaning + keywords) over every stored turn and session "
        "summary. A time phrase in the query ('last week', 'in March', '上周', '两天前') "
        "filters by date when --since/--until are not given, and is not searched for.")
    search.add_argument("query", nargs="*", metavar="QUERY", help="what to look for")
    search.add_argument("--since", metavar="D",
                        help="from this date: 2024-03-05, 7d, 2w, 3m, 1y, 'last week'")
    search.add_argument("--until", metavar="D", help="up to this date (same forms as --since)")
    search.add_argument("--top-k", type=top_k, default=None, metavar="N",
                        help="number of results (default 5)")
    search.add_argument("--json", action="store_true", help="print one JSON object")
    search.add_argument(
        "--queries", type=Path, metavar="FILE.jsonl",
        help='batch mode: lines {"query", "since"?, "until"?}; one JSON line out per line in')
    search.set_defaults(func=_search)

    imp = actions.add_parser(
        "import", help="import conversations from JSONL or a ChatGPT export (- for stdin)",
        description='JSONL lines {"session", "role": "user"|"assistant", "text", "created_at", '
        '"title"?, "ref"?}; a user line starts a turn, the next assistant line answers it. Also '
        "reads ChatGPT's conversations.json (or the export's .zip). An interrupted import "
        "resumes when run again; a finished one is refused unless --again.")
    imp.add_argument("file", metavar="FILE", help="a .jsonl file, conversations.json, a .zip "
                     "export, or - for stdin")
    imp.add_argument("--again", action="store_true",
                     help="import it once more although it was imported in full before")
    imp.set_defaults(func=_import)

    forget = actions.add_parser(
        "forget-all", help="erase every saved chat and its search index (asks for --yes)")
    forget.add_argument("--yes", action="store_true", help="confirm")
    forget.set_defaults(func=_forget_all)

    reindex = actions.add_parser(
        "reindex", help="rebuild the conversation search index from the sessions database")
    reindex.set_defaults(func=_reindex)

    finish = actions.add_parser(
        "finish", help="what follows an answer, now: the rolling summary, memory extraction "
        "from the turns not extracted yet, the session summary (`brain ask` runs this in the "
        "background after its answer)")
    finish.add_argument("session", metavar="ID", help="session id or prefix")
    finish.add_argument("--no-memory", action="store_true", help="no memory extraction")
    finish.set_defaults(func=_finish)


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
             "end_line": s.item.end_line, "page": s.item.page,
             "end_page": s.item.end_page if s.item.end_page is not None else s.item.page,
             "score": s.item.score}
            for s in turn.sources
        ],
        "memories": [
            {"id": m.memory_id, "type": m.kind, "text": m.text, "score": m.score}
            for m in turn.memories
        ],
        # Earlier conversations shown to the model, [c<n>]; a deleted one keeps only its n,
        # date and the "conversation deleted" marker.
        "conversations": [
            {"n": c.n, "cited": c.cited, "session": c.item.session_id or None,
             "seq": c.item.seq, "title": c.item.title, "created_at": _iso(c.item.created_at),
             "question": c.item.question, "answer": c.item.answer, "score": c.item.score}
            for c in turn.conversations
        ],
        "tools": [
            {"name": t.name, "arguments": t.arguments, "result": t.result, "ok": t.ok}
            for t in turn.tools
        ],
        "timings": turn.timings,
    }


def _list(args: argparse.Namespace) -> int:
    with services(args) as core:
        store = core.sessions()
        sessions = store.list(limit=args.limit)
    if args.json:
        print_json({"sessions": [session_json(s) for s in sessions]})
        return 0
    if not sessions:
        print('no sessions yet: start one with `brain ask "…"` or the terminal UI')
        return 0
    for s in sessions:
        turns = plural(s.turn_count, "turn")
        print(f"{s.id}  {_when(s.updated_at)}  {turns:>9}  {s.title or '(untitled)'}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from assistant.cli.ask_cmd import conversation_line

    with services(args) as core:
        store = core.sessions()
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
        for c in turn.cited_conversations:
            print(f"    {conversation_line(c)}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from assistant.chat.export import session_markdown

    with services(args) as core:
        store = core.sessions()
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
        # A Markdown file is read in terminals too: plain text, like the CLI's own output.
        tmp.write_text(plain(text), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
    print(f"exported session {session.id} ({plural(session.turn_count, 'turn')}) to {path}",
          file=sys.stderr)
    return 0


def _rename(args: argparse.Namespace) -> int:
    with services(args) as core:
        store = core.sessions()
        session = store.resolve(args.id)
        renamed = store.rename(session.id, " ".join(args.title))
    print(f"{renamed.id}  {renamed.title}")
    return 0


def _rm(args: argparse.Namespace) -> int:
    from assistant.erasure.actions import delete_sessions, finished_sessions
    from assistant.sessions.store import SessionNotFound

    with services(args) as core:
        ctx, store = core.ctx, core.sessions()
        # Resolve all first: a typo in the third id must not leave the first two deleted.
        found: dict[str, Session] = {}
        for ref in args.ids:
            try:
                session = store.resolve(ref)
            except SessionNotFound:
                # A re-run of a removal that is complete (a killed run's, finished by a later
                # command, see cli/main.py): deleted, as asked.
                if not finished_sessions(ctx, [ref]):
                    raise
                print(f"deleted session {ref} (earlier; nothing of it is left)")
                continue
            found[session.id] = session
        sessions = list(found.values())
        if not sessions:
            return 0
        # The sessions, their index units and keywords in one transaction, then their vectors
        # and every other copy (retrieval log, free pages).
        delete_sessions(core, [s.id for s in sessions])
        for session in sessions:
            print(f"deleted session {session.id} ({plural(session.turn_count, 'turn')}) "
                  f"{session.title or ''}".rstrip())
    return 0


def _forget_all(args: argparse.Namespace) -> int:
    from assistant.erasure.actions import forget_all_sessions

    if not args.yes:
        raise UserError("this erases every saved chat, its summary and its search index for good",
                        hint="run `brain sessions forget-all --yes` to confirm")
    with services(args) as core:
        count = forget_all_sessions(core)
    print(f"forgot {count} sessions; nothing of them remains on disk")
    return 0


def _search(args: argparse.Namespace) -> int:
    from assistant.conversations.finding import find_conversations
    from assistant.conversations.search import search_conversations
    from assistant.timeflags import range_from_flags
    from assistant.timerange import local_now
    from indexing.filesystem import can_write

    query = " ".join(args.query).strip()
    if args.queries is not None and query:
        raise UserError("give either a QUERY or --queries FILE, not both")
    if args.queries is not None and (args.since or args.until):
        raise UserError("--since/--until apply to one QUERY; in --queries put them on each line")
    batch = _read_queries(args.queries) if args.queries is not None else None
    now = local_now()
    if batch is None:
        time_range = range_from_flags(args.since, args.until, now)
        if not query and time_range is None:
            raise UserError("nothing to search for", hint='brain sessions search "what did we …"')
    with services(args) as core:
        index = core.conversations()
        if can_write(Path(index.store.path).parent):  # a read-only home: searched as it is
            index.sync()
        if batch is not None:  # the ranking as searched, for evaluation: no relevance floor
            for line_query, since, until in batch:
                result = search_conversations(
                    index, line_query, time_range=range_from_flags(since, until, now),
                    top_k=args.top_k, now=now)
                print_json(result.to_json())
            return 0
        found = find_conversations(index, query, time_range=time_range, top_k=args.top_k,
                                   now=now)
    if args.json:
        print_json(found.to_json())
        return 0
    print(found.caption, file=sys.stderr)
    for hit in found.shown:
        where = f"{hit.session_id}#{hit.seq}" if hit.seq is not None else f"{hit.session_id}"
        rank = "  ~" if hit is found.outside else f"{hit.rank:>3}"
        relevance = "" if hit.score is None else f"  ({hit.score:.0%})"
        print(f"{rank}. {_when(hit.created_at)}  {where}  {hit.title}{relevance}")
        if hit.seq is None:
            print(f"    summary: {_snippet(hit.answer)}")
            continue
        if hit.question:
            print(f"    you: {_snippet(hit.question)}")
        if hit.answer:
            print(f"    assistant: {_snippet(hit.answer)}")
    return 0


def _snippet(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _read_queries(path: Path) -> list[tuple[str, str | None, str | None]]:
    """Every line of a --queries file, validated before anything runs."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from exc
    out: list[tuple[str, str | None, str | None]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        query = obj.get("query") if isinstance(obj, dict) else None
        since = obj.get("since") if isinstance(obj, dict) else None
        until = obj.get("until") if isinstance(obj, dict) else None
        if not isinstance(query, str) or not query.strip() or not all(
                v is None or isinstance(v, str) for v in (since, until)):
            raise UserError(f'{path}:{number}: expected {{"query": "…", "since"?: "…", '
                            f'"until"?: "…"}}, got {raw.strip()[:80]}')
        out.append((query, since, until))
    if not out:
        raise UserError(f"{path}: no queries", hint='one JSON object per line: {"query": "..."}')
    return out


def _import(args: argparse.Namespace) -> int:
    from assistant.cli.memory_cmd import Progress
    from assistant.conversations.importing import ImportRun, import_conversations, read_source

    name = "stdin" if args.file == "-" else args.file
    skipped: list[str] = []  # odd conversations of a ChatGPT export: the others are imported
    lines, kind = read_source(args.file, skipped=skipped)
    progress = Progress("turns")  # import_conversations counts turns, not the file's lines

    def resuming(run: ImportRun) -> None:
        progress.base = run.committed
        print(f"resuming import: {run.committed} of {run.total} turns already stored",
              file=sys.stderr)

    core = services(args)
    try:
        report, errors = import_conversations(core.conversations(), lines, name=name,
                                              again=args.again, progress=progress,
                                              on_resume=resuming)
    finally:
        progress.finish()
        core.close()
    for reason in skipped:
        print(f"{name}: {reason}", file=sys.stderr)
    for error in errors:
        print(f"{name}: {error}", file=sys.stderr)
    what = "ChatGPT export: " if kind == "chatgpt" else ""
    if report.repaired:
        print(f"{what}all {report.already_stored} turns were stored by an earlier run that "
              f"stopped while indexing them; indexed {report.repaired} missing "
              f"unit{'s' if report.repaired != 1 else ''} (nothing imported twice)")
        return 1 if errors or skipped else 0
    summary = (f"{what}imported {report.turns} turn{'s' if report.turns != 1 else ''} in "
               f"{report.sessions} session{'s' if report.sessions != 1 else ''}")
    if errors:
        summary += f"; {len(errors)} bad line(s) not imported"
    if skipped:
        summary += f"; {len(skipped)} conversation(s) skipped"
    print(summary)
    if errors and report.turns + report.already_stored:
        print("fix the bad lines and import only them; importing the whole file again would "
              "store its good lines a second time", file=sys.stderr)
    return 1 if errors or skipped else 0


def _reindex(args: argparse.Namespace) -> int:
    with services(args) as core:
        report = core.conversations().rebuild()
    print(f"conversation index rebuilt: {report.summary()}")
    return 0


def _finish(args: argparse.Namespace) -> int:
    """The session's after-work in this process (memory follows the config unless
    --no-memory); a failure is a note on stderr, as after `ask --wait`."""
    import asyncio

    from assistant.cli.session_end import end_session

    memory = not args.no_memory
    with services(args) as core:
        service = core.open_chat(session_id=args.session, knowledge=False,
                                 memory=False if args.no_memory else None)

        async def finish() -> None:
            try:
                await end_session(service.engine, memory=memory)
            finally:
                await service.aclose()

        asyncio.run(finish())
    return 0
