"""Importing llama_index once, from one thread at a time.

llama_index's packages import each other in circles (`llama_index.core` imports
`core.types`, which needs `core.base.llms.types`, whose import starts with `core` again).
CPython's import locks are per module: when two threads start on different ends of such a
circle at once, one of them is handed a partially initialised module and fails with "cannot
import name 'ChatMessage' from partially initialized module". It happened in the TUI under
load: a chat turn built its first messages while a worker thread loaded the retriever, and the
turn failed. Every lazy import of llama_index in the product calls `load_llama_index()` first,
so the whole package is imported by one thread under one lock, and later imports are lookups.

Code on an event loop (the chat turn, on the TUI's loop) must not be the one waiting: the first
import takes seconds of CPU, and waiting for another thread's import blocks as long — the
screen froze mid-turn, Esc unread, ~10 s under --stress. It awaits `load_llama_index_async()`,
which does the import, or the waiting, on a thread.
"""

from __future__ import annotations

import asyncio
import importlib
import threading

_lock = threading.Lock()
_loaded = False


def load_llama_index() -> None:
    """Import `llama_index.core` whole (once per process, one thread at a time)."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if not _loaded:
            importlib.import_module("llama_index.core")
            _loaded = True


async def load_llama_index_async() -> None:
    """`load_llama_index()` without blocking the running event loop (a lookup once loaded)."""
    if not _loaded:
        await asyncio.get_running_loop().run_in_executor(None, load_llama_index)
