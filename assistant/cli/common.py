"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from assistant.context import AppContext


def context(args: argparse.Namespace) -> AppContext:
    """The AppContext for `--home` (or $BRAIN_HOME); raises ConfigError for a bad config."""
    return AppContext.load(getattr(args, "home", None))


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    sys.stdout.flush()
