"""`brain ARGS…` as the MCP tests start it (`mcp`, `index --watch`): the real command in its
own process, with the fast HashEmbedder (behind the real embedding cache) in place of the
embedding model, the same one `tests/fixtures/mcp.py` indexes the notes with.
Run as `python -m tests.mcp_launch ARGS…`."""

from __future__ import annotations

import sys
from typing import Any

from assistant.context import AppContext
from tests.fixtures.knowledge import make_embedder


def _embedder(self: AppContext) -> Any:
    with self._lock:
        if self._embedder is None:
            self._embedder = make_embedder(self.paths.embedding_cache_dir)
        return self._embedder


if __name__ == "__main__":
    AppContext.embedder = _embedder  # type: ignore[method-assign]  # the test model, see above
    from assistant.cli.main import main

    sys.exit(main(sys.argv[1:]))
