"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from assistant.context import AppContext
from assistant.plain_text import json_text


def context(args: argparse.Namespace) -> AppContext:
    """The AppContext for `--home` (or $BRAIN_HOME); raises ConfigError for a bad config."""
    return AppContext.load(getattr(args, "home", None))


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def print_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj) + "\n")
    sys.stdout.flush()


def iso_time(seconds: float) -> str:
    """`2024-05-01T12:00:00Z`: the one timestamp format of every `--json` output."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 turn', '2 turns', '0 hits'."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def rate(per_second: float, unit: str) -> str:
    """A speed people can read: '1,240 lines/s', '3.2 files/s', and below one per second
    '4.5 s/file' (never '0/s')."""
    if per_second >= 10:
        return f"{per_second:,.0f} {unit}/s"
    if per_second >= 1:
        return f"{per_second:.1f} {unit}/s"
    if per_second <= 0:
        return f"– {unit}/s"
    return f"{1 / per_second:.1f} s/{unit.removesuffix('s')}"
