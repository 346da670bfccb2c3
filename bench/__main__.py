"""`python -m bench [--quick] [NAME …]`: run benchmarks, write results, refresh the README table."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from bench.common import MissingData

# Each module defines `run(quick: bool) -> Report`.
BENCHMARKS: dict[str, str] = {
    "indexing": "bench.indexing",
    "retrieval": "bench.retrieval",
    "memory": "bench.memory",
    "memory_prompt": "bench.memory_prompt",
    "conversations": "bench.conversations",
    "chat": "bench.chat",
    "tui": "bench.tui",
    "startup": "bench.startup",
    "mcp": "bench.mcp",
    "chunking": "bench.chunking_stats",
    "scale": "bench.scale",
    "real_model": "bench.real_model",  # skipped unless `make test-real` installed its lane
}

# `make bench QUICK=1` passes --quick; the variable also works with plain `python -m bench`.
QUICK_ENV = "QUICK"


def _quick_from_env() -> bool:
    return os.environ.get(QUICK_ENV, "").strip().lower() not in ("", "0", "no", "false")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="reduced data, a few minutes")
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(BENCHMARKS))
    parser.add_argument("--in-process", action="store_true",
                        help="run every benchmark in this process (default: one process each)")
    parser.add_argument("--scale-max", action="store_true",
                        help="the scale benchmark also runs 100k chunks (stand-in encoder)")
    args = parser.parse_args(argv)
    args.quick = args.quick or _quick_from_env()
    if args.scale_max:
        os.environ["SCALE_MAX"] = "1"  # read by bench/scale.py, also in its own child process
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    names = args.names or list(BENCHMARKS)
    if len(names) > 1 and not args.in_process:
        return _each_in_own_process(names, quick=args.quick)
    failures: list[str] = []
    skipped: list[str] = []
    for name in names:
        print(f"== {name}{' (quick)' if args.quick else ''}", flush=True)
        try:
            module = importlib.import_module(BENCHMARKS[name])
            report = module.run(quick=args.quick)
        except MissingData as exc:
            print(f"  skipped: {exc}")
            skipped.append(name)
            continue
        except Exception:
            traceback.print_exc()
            failures.append(name)
            continue
        print(f"  wrote {report.write()}")
    from bench.readme_table import update_readme

    if update_readme():
        print("README.md performance table regenerated from bench/results/")
    else:
        print("README.md has no <!-- bench:start -->/<!-- bench:end --> markers: no table written")
    if skipped:
        print(f"skipped (missing data): {', '.join(skipped)}")
    if failures:
        print(f"FAILED: {', '.join(failures)}")
    return 1 if failures else 0


def _each_in_own_process(names: list[str], *, quick: bool) -> int:
    """One child process per benchmark: peak RSS, import times and caches of one benchmark
    must not leak into the next one's numbers."""
    import subprocess

    failed = []
    for name in names:
        done = subprocess.run([sys.executable, "-m", "bench", *(["--quick"] if quick else []),
                               name])
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
