"""Freed memory is wiped before it can reach a file.

hnswlib (Chroma's vector index) writes its segment files from buffers it never fully
initialises: the unused slots of a node's link list, and the tail of a buffer grown by realloc,
hold whatever the allocator handed out — memory freed earlier in the same process. After a
removal, that can be the deleted vectors of the collection just rewritten (measured: about one
run in three, ~47 of 200 deleted vectors' bytes reappeared in the new collection's
data_level0.bin). glibc's M_PERTURB makes `free` overwrite what it releases and `malloc` fill
what it hands out, so no earlier content survives into a new buffer.

Called once before the process first opens an embedded Chroma store. Other platforms (macOS:
MallocScribble, musl) are not covered; there the removal still rewrites the collection, but
a stale byte may survive in an index slot until it is overwritten.
"""

from __future__ import annotations

import ctypes
import sys

_M_PERTURB = -6  # glibc malloc.h
_PERTURB_BYTE = 0xA5
_state: bool | None = None


def wipe_freed_memory() -> bool:
    """Turn on glibc's M_PERTURB for this process (idempotent); False where unsupported."""
    global _state
    if _state is None:
        _state = False
        if sys.platform.startswith("linux"):
            try:
                mallopt = ctypes.CDLL(None).mallopt
                mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
                mallopt.restype = ctypes.c_int
                _state = bool(mallopt(_M_PERTURB, _PERTURB_BYTE))
            except (OSError, AttributeError):
                _state = False
    return _state
