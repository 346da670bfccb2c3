"""The layers' import direction, checked (harlequin's import-hygiene test).

Dependencies point one way, tui → assistant → indexing, and only tui/ imports Textual: every
module of assistant/ and indexing/ is imported in a fresh interpreter, which must not have
loaded Textual (nor anything of tui/) by then. A subprocess, so what other tests imported
cannot hide a violation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, json, pkgutil, sys
failed = {}
for package in ("indexing", "assistant"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # reported, not hidden: a module that cannot import is a bug
            failed[info.name] = f"{type(exc).__name__}: {exc}"
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "tui"))
ours = sorted(m for m in sys.modules if m.split(".")[0] in ("assistant", "indexing"))
print(json.dumps({"failed": failed, "loaded": loaded, "modules": ours}))
"""

INDEXING_PROBE = """
import importlib, json, pkgutil, sys
root = importlib.import_module("indexing")
for info in pkgutil.walk_packages(root.__path__, "indexing."):
    importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("assistant", "tui"))))
"""


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_assistant_and_indexing_never_load_textual() -> None:
    report = json.loads(_run(PROBE))
    assert report["failed"] == {}
    assert report["loaded"] == [], "assistant/ or indexing/ imports the UI"
    # The walk really covered both layers (not an empty package path).
    assert {"assistant.chat.engine", "indexing.manifest"} <= set(report["modules"])


def test_indexing_never_imports_the_layers_above() -> None:
    assert json.loads(_run(INDEXING_PROBE)) == []
