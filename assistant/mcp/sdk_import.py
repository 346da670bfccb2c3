"""Importing the MCP SDK's server side fast, so a client's first `initialize` waits less.

Measured with `python -X importtime` (issue 26): the SDK's import is most of `brain mcp`'s
start-up, and two parts of it are not needed to serve:

- the `mcp` and `mcp.server` package `__init__`s import the client, the high-level
  `MCPServer` (FastMCP) and what those pull in; the low-level server we run imports none of
  that itself. Here both packages are registered with their real spec but their `__init__`
  runs only when a name of theirs is first asked for (`from mcp import ClientSession` still
  works: it runs the real `__init__` then). Submodules (`mcp.server.lowlevel`, …) import
  directly;
- the SDK defines about 550 pydantic models (two protocol versions) and pydantic builds each
  one's validator when its class is created. With pydantic's own `defer_build` a validator is
  built when the model is first used, so the models a session never sees cost only their class.
  Set for the SDK's models only: the switch is on while they are created, then off again.

Together a third of the start-up's CPU (`brain mcp` spawn to the `initialize` answer: 1.85 →
1.25 s of CPU, A/B in one run at load 16). The protocol itself is the SDK's, unchanged (the
issue rules out a hand-rolled JSON-RPC).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LAZY_PACKAGES = ("mcp", "mcp.server")
_lock = threading.RLock()


def load_server_sdk() -> None:
    """Import what the low-level server and the stdio/HTTP transports need, the fast way.

    A no-op once the SDK is imported (a process that used the client already has it all)."""
    with _lock:
        if "mcp" not in sys.modules:
            for name in LAZY_PACKAGES:
                _register_lazy_package(name)
        with _deferred_pydantic_build():
            import mcp.server.context
            import mcp.server.lowlevel
            import mcp.server.stdio  # noqa: F401
            import mcp_types  # noqa: F401


def _register_lazy_package(name: str) -> None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:  # not installed: the normal import says so
        return
    module = importlib.util.module_from_spec(spec)  # __path__ set: submodules import as usual

    def complete(attribute: str) -> object:
        """Run the package's real `__init__` on the first name not yet in it."""
        with _lock:
            if module.__dict__.pop("__getattr__", None) is not None:
                assert spec.loader is not None
                spec.loader.exec_module(module)
        return object.__getattribute__(module, attribute)

    module.__getattr__ = complete  # type: ignore[method-assign]  # why: PEP 562 module hook
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)


@contextmanager
def _deferred_pydantic_build() -> Iterator[None]:
    from pydantic import BaseModel

    config = BaseModel.model_config
    if "defer_build" in config:  # someone else set it: leave it as it is
        yield
        return
    config["defer_build"] = True  # models created now inherit it (pydantic's ConfigWrapper)
    try:
        yield
    finally:
        del config["defer_build"]

