"""`brain log`: recent retrievals with their hits and timings; export 👎 queries as eval cases."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

from assistant.cli.common import context, print_json
from assistant.cli.search_cmd import _display_path, _positive_int
from assistant.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "log",
        help="recent searches with their results, scores and timings",
        description="Every search (CLI, TUI, chat) is logged with its sources, scores and "
        "per-stage latency; chunk text is never stored. --disliked --export FILE turns the "
        "queries you rated 👎 into eval cases for `brain eval`.",
    )
    p.add_argument("--limit", type=_positive_int, default=20, metavar="N", help="entries shown")
    p.add_argument("--disliked", action="store_true", help="only entries rated 👎")
    p.add_argument(
        "--export", type=Path, metavar="FILE.jsonl",
        help='write eval cases {"query", "expected"} (with --disliked)',
    )
    p.add_argument("--json", action="store_true", help="print the entries as JSON lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assistant.retrieval.log import RetrievalLog

    if args.export is not None and not args.disliked:
        raise UserError("--export writes 👎-rated queries: use it with --disliked")
    ctx = context(args)
    with RetrievalLog.open(ctx.paths.retrieval_log_db) as log:
        if args.export is not None:
            count = log.export_disliked(args.export)
            print(f"wrote {count} eval case{'s' if count != 1 else ''} to {args.export}")
            if count:
                print(f"run them with: brain eval {args.export}")
            return 0
        entries = log.recent(args.limit, disliked=args.disliked)
    if args.json:
        for entry in entries:
            print_json(asdict(entry))
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
                  f"{len(entry.hits)} hits  {total:.0f} ms{flag_text}\n")
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
    out.flush()
    return 0
