"""`brain doctor [--json]`: is everything second-brain needs present and working?"""

from __future__ import annotations

import argparse
import sys

from assistant.cli.common import print_json

NAME_WIDTH = len("index consistency")  # the longest check name, so details line up


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "doctor",
        help="check the model server, the models, the stores and the data dir",
        description="Check everything second-brain needs, one line each with a fix hint. "
        "Exits 1 when an essential check fails.",
    )
    parser.add_argument("--json", action="store_true",
                        help='print {"ok", "checks": [{"name", "ok", "detail", "hint", '
                        '"essential"}]}')
    parser.set_defaults(func=_doctor)


def _symbols() -> tuple[str, str, str]:
    """✓/✗/! when the terminal can show them, else ASCII (LANG=C, old Windows consoles)."""
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "✓✗".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "OK", "FAIL", "WARN"
    return "✓", "✗", "!"


def _doctor(args: argparse.Namespace) -> int:
    from assistant.doctor import Check, run_doctor

    home = getattr(args, "home", None)
    if args.json:
        report = run_doctor(home)
        print_json(report.as_dict())
        return 0 if report.ok else 1
    good, bad, warn = _symbols()
    arrow = "→" if good == "✓" else "->"

    def show(check: Check) -> None:
        # Printed as each verdict is known: "Ollama is down" appears before the model loads.
        mark = good if check.ok else (bad if check.essential else warn)
        line = f"{mark} {check.name:<{NAME_WIDTH}}  {check.detail}"
        if not check.ok and check.hint:
            line += f"  {arrow} {check.hint}"
        print(line, flush=True)

    report = run_doctor(home, on_check=show)
    if not report.ok:
        failed = [c.name for c in report.checks if c.essential and not c.ok]
        print(f"\n{len(failed)} essential check(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
