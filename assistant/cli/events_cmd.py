"""`brain events …`: see, search and erase what AI agents logged through `brain mcp`."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from assistant.cli.common import positive_int, print_json, services
from assistant.errors import UserError
from assistant.plain_text import plain

if TYPE_CHECKING:
    from assistant.events.matrix import Filters
    from assistant.events.model import Event
    from assistant.events.service import EventService

TYPES_HELP = "action, observation, decision, goal, error, note or summary (repeatable)"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("events", help="the agent event log written through `brain mcp`")
    actions = parser.add_subparsers(dest="events_action", metavar="ACTION")

    p = actions.add_parser("list", help="events, newest first")
    _filters(p)
    p.add_argument("--limit", type=positive_int, default=50, metavar="N")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_list)

    p = actions.add_parser("search", help="events relevant to a query (meaning and words, "
                           "blended with importance and recency)")
    p.add_argument("query")
    _filters(p)
    p.add_argument("--top-k", type=positive_int, default=10, metavar="N")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_search)

    p = actions.add_parser("show", help="one event in full, with what it follows from")
    p.add_argument("id", help="event id or a unique prefix")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_show)

    p = actions.add_parser("rm", help="erase events for good (with the summaries written "
                           "from them): nothing left in any file")
    p.add_argument("ids", nargs="+", metavar="ID")
    p.set_defaults(func=_rm)

    p = actions.add_parser("forget-all", help="erase the whole event log")
    p.add_argument("--yes", action="store_true", help="confirm")
    p.set_defaults(func=_forget_all)


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--type", action="append", default=[], metavar="T", help=TYPES_HELP)
    p.add_argument("--since", metavar="WHEN", help="ISO date, 12h/7d/2w/3m/1y, or a phrase")
    p.add_argument("--until", metavar="WHEN")
    p.add_argument("--session", metavar="S", help="only this agent session")
    p.add_argument("--min-importance", type=float, default=0.0, metavar="X",
                   help="only events at least this important (0-1)")


def filters_from(args: argparse.Namespace) -> Filters:
    from assistant.events.matrix import Filters
    from assistant.events.model import EventType, parse_type
    from assistant.timeflags import range_from_flags

    if not 0 <= args.min_importance <= 1:
        raise UserError(f"--min-importance must be between 0 and 1, got {args.min_importance}")
    types = tuple(dict.fromkeys(parse_type(t, allowed=tuple(EventType)) for t in args.type))
    found = range_from_flags(args.since, args.until)
    since, until = found.bounds if found is not None else (None, None)
    return Filters(types=types, since=since, until=until, session=args.session,
                   min_importance=args.min_importance)


@contextmanager
def _opened(args: argparse.Namespace) -> Iterator[EventService]:
    with services(args) as core:
        yield core.events()


def line(event: Event, *, score: float | None = None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(event.ts))
    scored = f"  {score:.3f}" if score is not None else ""
    session = f"  [{event.session}]" if event.session else ""
    text = " ".join(event.text.split())
    if len(text) > 100:
        text = text[:99] + "…"
    return plain(f"{event.id}  {when}  {event.type.value:<11} {event.importance:.2f}"
                         f"{scored}  {event.agent}{session}  {text}")


def _list(args: argparse.Namespace) -> int:
    filters = filters_from(args)
    with _opened(args) as service:
        events = service.store.list(
            types=filters.types, since=filters.since, until=filters.until,
            session=filters.session, min_importance=filters.min_importance, limit=args.limit)
    if args.json:
        print_json({"events": [e.to_json() for e in events]})
    elif not events:
        print("no events (agents log them through `brain mcp`'s log_event tool)")
    for event in events if not args.json else ():
        print(line(event))
    return 0


def _search(args: argparse.Namespace) -> int:
    filters = filters_from(args)
    with _opened(args) as service:
        service.embed_pending()  # events logged since the last search: findable by meaning too
        hits = service.search(args.query, filters=filters, top_k=args.top_k)
    if args.json:
        print_json({"query": args.query, "events": [h.event.to_json(score=h.score)
                                                    for h in hits]})
    elif not hits:
        print("no matching events")
    for hit in hits if not args.json else ():
        print(line(hit.event, score=hit.score))
    return 0


def _show(args: argparse.Namespace) -> int:
    with _opened(args) as service:
        event = service.store.get(args.id)
        parent = service.store.get_many([event.parent]).get(event.parent) \
            if event.parent else None
    if args.json:
        print_json(event.to_json())
        return 0
    shown = event.to_json()
    for key in ("id", "type", "ts", "importance", "agent", "session", "parent"):
        if shown.get(key) is not None:
            print(plain(f"{key}: {shown[key]}"))
    if parent is not None:
        print(f"follows: {line(parent)}")
    if event.summary_of:
        print(f"summary of: {' '.join(event.summary_of)}")
    print()
    print(plain(event.text))
    return 0


def _rm(args: argparse.Namespace) -> int:
    from assistant.erasure.actions import remove_events

    with services(args) as core:
        removed = remove_events(core, args.ids)
    if not removed:
        print("the events were erased earlier; nothing remains on disk")
        return 0
    extra = len(removed) - len(set(args.ids))
    note = f" (and {extra} summaries written from them)" if extra > 0 else ""
    print(f"erased {len(set(args.ids))} events{note}; nothing remains on disk")
    return 0


def _forget_all(args: argparse.Namespace) -> int:
    if not args.yes:
        raise UserError("this erases every agent event and summary for good",
                        hint="run `brain events forget-all --yes` to confirm")
    from assistant.erasure.actions import forget_all_events

    with services(args) as core:
        count = forget_all_events(core)
    print(f"forgot {count} events; nothing remains on disk", file=sys.stdout)
    return 0
