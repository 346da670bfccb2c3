"""Loaded by every Python subprocess the test suite starts (conftest puts this folder first on
PYTHONPATH): the same loopback-only network guard as in the test process, so a `brain` CLI run,
a worker or a server that tries to reach the internet fails its test too. Then it hands over to
any other sitecustomize further down the path, as if this one were not there."""

from __future__ import annotations

import importlib
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))

if _ROOT not in sys.path:
    sys.path.append(_ROOT)  # appended: the child's own imports still win

try:
    from tests import netguard
except ImportError:  # a child with an unrelated `tests` package: leave it alone
    pass
else:
    netguard.install()

_self = sys.modules.pop("sitecustomize", None)
_saved = list(sys.path)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
try:
    importlib.import_module("sitecustomize")
except ImportError:
    # No other one: the import that is running this file expects to find a module here.
    sys.modules["sitecustomize"] = _self  # type: ignore[assignment]
finally:
    sys.path[:] = _saved
