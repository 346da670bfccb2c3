"""Every store besides the removed data's own that may hold a copy of it, visited in turn.

A trace eraser is `eraser(stores, removal)`; it erases its copies of what `removal` names in
the caller's stores (stores.py) and scrubs its file. The built-in ones cover the sessions
database, the retrieval log and the embedding cache; another package that keeps a copy of
chunks, memories or turns (e.g. a conversation index) adds its own with `register(name,
eraser)` at import time, so no removal path can forget it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from assistant.erasure import builtin
from assistant.erasure.removal import Removal
from assistant.erasure.stores import Stores
from assistant.errors import UserError
from indexing.errors import HintedError, log_failure

log = logging.getLogger(__name__)

TraceEraser = Callable[[Stores, Removal], None]

_ERASERS: dict[str, TraceEraser] = {}


def register(name: str, eraser: TraceEraser) -> None:
    """Add (or replace) the eraser called `name`."""
    _ERASERS[name] = eraser


def registered() -> dict[str, TraceEraser]:
    _builtin()
    return dict(_ERASERS)


def erase_traces(stores: Stores, removal: Removal) -> None:
    """Run every eraser; one that fails does not stop the others, and the first failure is
    raised at the end (a removal must never look complete when a trace may remain)."""
    failures: list[tuple[str, Exception]] = []
    for name, eraser in registered().items():
        try:
            eraser(stores, removal)
        except Exception as exc:  # a registered eraser may raise anything: the rest still run
            log_failure(log, f"erasing traces in {name} failed", exc)
            failures.append((name, exc))
    if failures:
        where, error = failures[0]
        if isinstance(error, HintedError):
            raise error
        raise UserError(f"the removal is done, but erasing its traces in the {where} failed "
                        f"({error})", hint="run the removal again") from error


_loaded = False


def _builtin() -> None:
    """The built-in erasers after those registered at import time (a registered one of the
    same name replaces the built-in)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name, eraser in builtin.ERASERS.items():
        _ERASERS.setdefault(name, eraser)
