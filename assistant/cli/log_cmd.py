"""`brain log`: recent retrievals with their hits and timings; export 👎 queries as eval cases."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

from assistant.cli.common import iso_time, plural, positive_int, print_json, services
from assistant.cli.search_cmd import _display_path
from assistant.errors import UserError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "log",
        help="recent searches with their results, scores and timings",
        description="Every search (CLI, TUI, chat) is logged with its sources, scores and "
        "per-stage latency; chunk text is never stored. --disliked --export FILE turns the "
        "queries you rated 👎 into eval cases for `brain eval`.",
    )
    p.add_argument("--limit", type=positive_int, default=20, metavar="N", help="entries shown")
    p.add_argument("--disliked", action="store_true", help="only entries rated 👎")
    p.add_argument(
        "--export", type=Path, metavar="FILE.jsonl",
        help='write eval cases {"query", "expected"} (with --disliked)',
    )
    p.add_argument("--json", action="store_true", help="print the entries as JSON lines")
    p.set_defaults(func=run)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    rate = actions.add_parser(
        "rate", help="rate a logged search, and name the file that should have been found",
        description="Rate entry ID (see `brain log`) 👍 or 👎. --correct PATH names the file "
        "that answers the query (implies 👎 unless --up); `brain log --disliked --export` "
        "turns those into eval cases for `brain eval`.")
    rate.add_argument("id", type=positive_int, metavar="ID", help="the entry number (#ID)")
    updown = rate.add_mutually_exclusive_group()
    updown.add_argument("--up", action="store_true", help="👍 the results were right")
    updown.add_argument("--down", action="store_true", help="👎 the results were wrong")
    rate.add_argument("--correct", action="append", type=Path, default=[], metavar="PATH",
                      help="a file that answers the query (repeatable)")
    rate.set_defaults(func=run_rate)


def run_rate(args: argparse.Namespace) -> int:
    if not (args.up or args.down or args.correct):
        raise UserError("say how the results were: --up, --down or --correct PATH")
    correct = []
    for path in args.correct:
        resolved = path.expanduser().resolve()
        if not resolved.is_file():
            raise UserError(f"{path}: no such file",
                            hint="--correct names the file that answers the query")
        correct.append(str(resolved))
    with services(args) as core:
        log = core.retrieval_log()
        entry = log.get(args.id)
        if entry is None:
            raise UserError(f"no retrieval log entry {args.id}", hint="`brain log` lists them")
        rating = 1 if args.up else -1
        log.rate(args.id, rating, correct or entry.correct_sources)
    mark = "👍" if rating > 0 else "👎"
    print(f"#{args.id} {entry.query!r} rated {mark}"
          + (f"; right source: {', '.join(correct)}" if correct else ""))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.export is not None and not args.disliked:
        raise UserError("--export writes 👎-rated queries: use it with --disliked")
    with services(args) as core:
        log = core.retrieval_log()
        if args.export is not None:
            count = log.export_disliked(args.export)
            unlabeled = sum(1 for e in log.recent(limit=1_000_000, disliked=True)
                            if not e.correct_sources)
            print(f"wrote {plural(count, 'eval case')} to {args.export}")
            if unlabeled:
                print(f"{plural(unlabeled, 'disliked search')} without a right source "
                      "(\"expected\": []): name it with `brain log rate ID --correct PATH`")
            if count:
                print(f"run them with: brain eval {args.export}")
            return 0
        entries = log.recent(args.limit, disliked=args.disliked)
    if args.json:
        for entry in entries:
            obj = asdict(entry)
            # ISO 8601 like every other --json output (these were epoch seconds).
            obj["time"] = iso_time(entry.time)
            obj["rated_at"] = iso_time(entry.rated_at) if entry.rated_at is not None else None
            print_json(obj)
        return 0
    if not entries:
        what = "rated 👎" if args.disliked else "logged"
        print(f"no searches {what} yet")
        return 0
    out = sys.stdout
    for entry in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.time))
        flags = []
        if entry.low_confidence:
            flags.append("low confidence")
        if entry.rating is not None:
            flags.append("👍" if entry.rating > 0 else "👎")
        flag_text = f"  [{', '.join(flags)}]" if flags else ""
        total = entry.timings.get("total", 0.0)
        out.write(f"#{entry.id}  {when}  {entry.origin:<5} {entry.query!r}  "
                  f"{plural(len(entry.hits), 'hit')}  {total:.0f} ms{flag_text}\n")
        if entry.search_query != entry.query:
            out.write(f"      searched as {entry.search_query!r}\n")
        if entry.in_path:
            out.write(f"      in {entry.in_path}\n")
        for hit in entry.hits[:3]:
            cos = "—" if hit.cosine is None else f"{max(0.0, hit.cosine) * 100:.0f}%"
            kw = "—" if hit.keyword is None else f"{hit.keyword:.2f}"
            out.write(f"      {hit.rank}. {_display_path(hit.source)}  (match {cos}, "
                      f"keyword {kw})\n")
        if entry.correct_sources:
            out.write(f"      right sources: {', '.join(entry.correct_sources)}\n")
        elif entry.rating is not None and entry.rating < 0:
            out.write(f"      right source not named yet: brain log rate {entry.id} "
                      "--correct PATH\n")
    out.flush()
    return 0
