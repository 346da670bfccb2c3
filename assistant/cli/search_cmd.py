"""`brain search`: retrieval only (no LLM), as a ranked list or the stable JSON contract."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.cli.common import print_json, services, top_k
from assistant.errors import UserError

if TYPE_CHECKING:
    from assistant.retrieval.hit import RetrievalResult, SearchHit


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "search",
        help="search your indexed files (no LLM): ranked chunks with their scores",
        description="Hybrid retrieval (meaning + keywords) over the indexed folders. Scores: "
        "'match' is the cosine similarity of meaning, 'keyword' the BM25 keyword match "
        "normalised to 0-1, '#N fused' the rank after combining both.",
    )
    p.add_argument("query", nargs="*", metavar="QUERY", help="what to look for")
    p.add_argument("--top-k", type=top_k, metavar="N", help="number of results")
    p.add_argument(
        "--in", dest="in_path", metavar="PATH",
        help="only files under this folder or file, or matching this glob ('*.md')",
    )
    p.add_argument("--since", metavar="D", help="only files modified since D: 2024-03-05, 7d, "
                   "2w, 3m, 1y, 'last week'")
    p.add_argument("--until", metavar="D", help="only files modified before the end of D")
    p.add_argument(
        "--all-dates", action="store_true",
        help="a time phrase in the query is its topic ('files changed in the past week'), not "
        "a filter: search every date with the words as typed",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--queries", type=Path, metavar="FILE.jsonl",
        help='batch mode: lines {"query": "..."} (`-` reads stdin); prints one JSON object '
        "per line, in order",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    query = " ".join(args.query).strip()
    if args.queries is not None and query:
        raise UserError("give either a QUERY or --queries FILE, not both")
    if args.queries is None and not query:
        raise UserError("nothing to search for", hint='brain search "how do I …"')
    batch = _read_queries(args.queries) if args.queries is not None else None
    from assistant.timeflags import range_from_flags
    from assistant.timerange import local_now

    now = local_now()
    # Without a flag, a time phrase in the query ("budget notes from last week") narrows the
    # file dates and leaves the text the retrievers see (assistant/retrieval/dated.py).
    explicit = range_from_flags(args.since, args.until, now)
    if args.all_dates and explicit is not None:
        raise UserError("--all-dates searches every date: drop --since/--until, or --all-dates")

    from assistant.retrieval.contract import result_to_json
    from assistant.retrieval.dated import search_dated
    core = services(args)
    retriever = core.retriever()
    try:
        if batch is not None:
            warned: set[str] = set()
            for line_query in batch:
                found = search_dated(retriever, line_query, now=now, explicit=explicit,
                                     phrases=not args.all_dates, top_k=args.top_k,
                                     in_path=args.in_path)
                print_warnings(found.result.warnings, seen=warned)
                print_json(result_to_json(found.result, time_range=found.time_range_json()))
            return 0
        found = search_dated(retriever, query, now=now, explicit=explicit,
                             phrases=not args.all_dates, top_k=args.top_k, in_path=args.in_path)
        # On stderr in every mode: stdout is the result alone.
        print_warnings(found.result.warnings)
        if found.time_range is not None and not args.json:
            print(found.describe(), file=sys.stderr)
        if args.json:
            print_json(result_to_json(found.result, time_range=found.time_range_json()))
        else:
            print_result(found.result)
        return 0
    finally:
        core.close()


def _read_queries(path: Path) -> list[str]:
    """Every query of the batch file (`-`: stdin), validated before anything runs."""
    try:
        if str(path) == "-":
            lines = sys.stdin.buffer.read().decode("utf-8").splitlines()
            path = Path("<stdin>")
        else:
            lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from exc
    queries: list[str] = []
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        query = obj.get("query") if isinstance(obj, dict) else None
        if not isinstance(query, str) or not query.strip():
            raise UserError(
                f'{path}:{number}: expected {{"query": "non-empty text"}}, got {text[:80]}'
            )
        queries.append(query)
    if not queries:
        raise UserError(f"{path}: no queries", hint='one JSON object per line: {"query": "..."}')
    return queries


def _display_path(source: str) -> str:
    home = os.path.expanduser("~")
    if home not in ("", "/") and source.startswith(home + os.sep):
        return "~" + source[len(home):]
    return source


def describe_scores(hit: SearchHit) -> str:
    """'match 71% · keyword 0.80 · #1 fused (meaning #2, keyword #1)', for people."""
    from assistant.retrieval.scores import format_keyword, percent

    parts = [f"match {percent(hit.cosine)}", f"keyword {format_keyword(hit.keyword)}"]
    ranks = []
    if hit.dense_rank is not None:
        ranks.append(f"meaning #{hit.dense_rank}")
    if hit.keyword_rank is not None:
        ranks.append(f"keyword #{hit.keyword_rank}")
    parts.append(f"#{hit.rank} fused ({', '.join(ranks)})")
    if hit.recency_boost > 0:
        parts.append(f"recent +{hit.recency_boost * 100:.0f}%")
    if hit.rerank_score is not None:
        parts.append(f"rerank {hit.rerank_score:.2f}")
    return " · ".join(parts)


def print_warnings(warnings: tuple[str, ...], *, seen: set[str] | None = None) -> None:
    """Each warning once on stderr (`seen` dedups them over a --queries batch)."""
    for warning in warnings:
        if seen is not None:
            if warning in seen:
                continue
            seen.add(warning)
        print(f"warning: {warning}", file=sys.stderr, flush=True)


def print_result(result: RetrievalResult) -> None:
    from assistant.retrieval.snippet import snippet

    out = sys.stdout
    total = result.timings.get("total", 0.0)
    plural = "" if len(result.hits) == 1 else "s"
    out.write(f"{len(result.hits)} result{plural} for {result.query!r} ({total:.0f} ms)\n")
    if result.search_query and result.search_query != result.query:
        out.write(f"searched as: {result.search_query!r}\n")
    if result.low_confidence:
        out.write(
            "low confidence: nothing matches strongly; these are the closest chunks, "
            "which may not answer the question\n"
        )
    for hit in result.hits:
        c = hit.chunk
        where = f"{_display_path(c.source)}:{c.start_line}"
        if c.page_label is not None:
            where += f" ({c.page_label})"
        if hit.more_from_file:
            where += f"  (+{hit.more_from_file} more from this file)"
        out.write(f"\n{hit.rank:>2}. {where}\n")
        if c.heading:
            out.write(f"    {c.heading}\n")
        out.write(f"    {describe_scores(hit)}\n")
        out.write(f"    {snippet(c.text, result.search_query or result.query)}\n")
    out.flush()
