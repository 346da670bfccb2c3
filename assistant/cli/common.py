"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from assistant.context import AppContext
from assistant.plain_text import json_text
from assistant.services import Services


def context(args: argparse.Namespace) -> AppContext:
    """The AppContext for `--home` (or $BRAIN_HOME); raises ConfigError for a bad config."""
    return AppContext.load(getattr(args, "home", None))


def services(args: argparse.Namespace) -> Services:
    """The stores of one command, each opened once on first use; `with services(args) as
    core:` closes them all when the command ends."""
    return Services(context(args))


# Results one search may return: the retrieval.top_k range (assistant/config.py). Beyond it a
# vector store is asked for millions of neighbours and fails in ways that look like damage.
MAX_TOP_K = 200
# Anything else counted (list lengths, entry numbers): within SQLite's integer range.
MAX_COUNT = 2**63 - 1


def int_in(low: int, high: int) -> Callable[[str], int]:
    """argparse type: a whole number from `low` to `high`, else a one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not low <= value <= high:
            span = (f"from {low} to {high}" if high != MAX_COUNT
                    else f"at least {low}" if value < low else "a smaller number")
            raise argparse.ArgumentTypeError(f"expected {span}, got {value}")
        return value

    parse.__name__ = "int"  # argparse names the type in some messages
    return parse


positive_int = int_in(1, MAX_COUNT)
top_k = int_in(1, MAX_TOP_K)


def top_k_error(value: object) -> str | None:
    """Why a `top_k` read from a --queries line is unusable (same range as --top-k), or None."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TOP_K:
        return f"top_k must be a whole number from 1 to {MAX_TOP_K}"
    return None


def nonempty(text: str) -> str:
    """argparse type: a value that is not empty or blank (`--model ""` must not mean default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a value, got an empty string")
    return text


def refuse_empty_values(parser: argparse.ArgumentParser) -> None:
    """Make every option and argument of `parser` (and its subcommands) that takes a value
    refuse an empty one. Words of a free-text QUERY/QUESTION (nargs="*") are joined, so an
    empty word there is harmless and left alone; an empty path would mean the current folder.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                refuse_empty_values(child)
        elif (isinstance(action, argparse._StoreAction | argparse._AppendAction)
              and action.nargs != "*"):
            action.type = _checked(action.type)


def _checked(inner: Any) -> Callable[[str], Any]:
    def checked(text: str) -> Any:
        value = nonempty(text)
        return inner(value) if callable(inner) else value

    return checked


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

