"""`brain eval FILE.jsonl`: retrieval quality (hit@k, MRR@10) on questions with known answers."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.cli.common import context, plural, print_json, top_k

if TYPE_CHECKING:
    from assistant.retrieval.evaluation import EvalReport, Metrics


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "eval",
        help="measure retrieval quality on questions with known answers",
        description='Each line of FILE is {"query": "...", "expected": ["path/suffix.md" or '
        '"file-stem", ...], "lang": "en"} ("lang" optional). Prints hit@1/3/5/10 and MRR@10 '
        "(per language when lines carry one) and the questions whose answer was not found.",
    )
    p.add_argument("file", type=Path, metavar="FILE.jsonl")
    p.add_argument(
        "--top-k", type=top_k, default=10, metavar="N",
        help="distinct files ranked per question (default 10)",
    )
    p.add_argument("--json", action="store_true", help="metrics plus, per query, the sources")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from assistant.retrieval.evaluation import (
        distinct_sources,
        evaluate,
        read_cases,
        run_cases,
        unindexed_expected,
    )
    from assistant.services import Services

    cases, skipped = read_cases(args.file)
    if not cases:
        # A 👎 export before any right source was named: say what to do, not "no cases".
        print(f"{args.file}: {plural(skipped, 'unlabeled case')} (no expected sources), "
              "nothing to score\n  name the right file of a disliked search with "
              "`brain log rate ID --correct PATH`, then export again")
        if args.json:
            print_json(report_to_json(evaluate([]), skipped, 0.0))
        return 0
    ctx = context(args)
    with Services(ctx, origin="eval", log_searches=False) as core:
        retriever = core.retriever()
        indexed = retriever.kb.sources_under("*")
        for want in unindexed_expected(cases, indexed):
            print(f"warning: expected {want!r} matches no indexed file: its cases cannot be "
                  "found (index its folder, or fix the path)", file=sys.stderr)
        # Several chunks of one file collapse into one answer, so fetch enough chunks to
        # fill top_k distinct files.
        chunks = max(ctx.config.retrieval.candidates, args.top_k * 5)
        started = time.perf_counter()
        report = run_cases(
            cases,
            lambda q: distinct_sources(
                h.source for h in retriever.search(q, top_k=chunks, log=False).hits
            )[: args.top_k],
        )
    seconds = time.perf_counter() - started
    if args.json:
        print_json(report_to_json(report, skipped, seconds))
    else:
        print_report(report, skipped, seconds)
    return 0


def report_to_json(report: EvalReport, skipped: int, seconds: float) -> dict[str, Any]:
    return {
        "metrics": report.overall.as_dict(),
        "by_lang": {lang: m.as_dict() for lang, m in report.by_lang.items()},
        "skipped": skipped,
        "seconds": round(seconds, 3),
        "queries": [
            {
                "query": r.case.query,
                "expected": list(r.case.expected),
                "lang": r.case.lang,
                "rank": r.rank,
                "sources": list(r.sources[:10]),
            }
            for r in report.results
        ],
    }


def _row(name: str, m: Metrics) -> str:
    hits = "  ".join(f"{m.hit_at[k]:>6.3f}" for k in sorted(m.hit_at))
    return f"{name:<8}{m.count:>6}  {hits}  {m.mrr:>7.3f}"


def print_report(report: EvalReport, skipped: int, seconds: float) -> None:
    out = sys.stdout
    n = report.overall.count
    out.write(f"{n} question{'s' if n != 1 else ''} in {seconds:.1f} s")
    if skipped:
        out.write(f" ({plural(skipped, 'unlabeled case')} not scored: no expected sources)")
    out.write("\n\n")
    ks = sorted(report.overall.hit_at)
    out.write(f"{'':<8}{'n':>6}  " + "  ".join(f"{'hit@' + str(k):>6}" for k in ks)
              + f"  {'MRR@10':>7}\n")
    out.write(_row("all", report.overall) + "\n")
    for lang, m in report.by_lang.items():
        out.write(_row(lang, m) + "\n")
    misses = report.misses
    if misses:
        out.write(f"\nNot found in the top {max(ks)} ({len(misses)}):\n")
        for r in misses:
            got = ", ".join(Path(s).name for s in r.sources[:3]) or "nothing"
            lang = f" [{r.case.lang}]" if r.case.lang else ""
            out.write(f"  - {r.case.query!r}{lang}\n")
            out.write(f"      expected {', '.join(r.case.expected)}; got {got}\n")
    out.flush()
