"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from assistant.context import AppContext


def context(args: argparse.Namespace) -> AppContext:
    """The AppContext for `--home` (or $BRAIN_HOME); raises ConfigError for a bad config."""
    return AppContext.load(getattr(args, "home", None))


def print_json(obj: Any) -> None:
    text = json.dumps(obj, ensure_ascii=False)
    # A file name that is not UTF-8 arrives as lone surrogates (surrogateescape); written raw
    # it would make the output invalid UTF-8. As \uDCxx escapes it stays valid JSON, and
    # json.loads + os.fsencode give back the original bytes.
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


_SURROGATE = re.compile("[\ud800-\udfff]")
