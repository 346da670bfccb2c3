"""The real `brain` CLI with only the embedding model's arithmetic replaced (issue 25).

Above 4k chunks the scale benchmark cannot afford the real model on a shared 2-core machine, so
it runs `python -m bench.scale_standin --home H <brain args…>`: the product's own code end to
end (cache, Chroma, snapshot, FTS5, CLI), with `make_inner_model` answering a deterministic
384-dimension encoder of the same shape as the bundled model's. Results say so ("stand-in").
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

DIMENSION = 384


class StandInModel:
    """Unit vectors from a hash of each text: the same text always gets the same vector."""

    model_id = "bench:stand-in-384"

    def known_dimension(self) -> int | None:
        return DIMENSION

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return np.stack([self.encode_query(text) for text in texts])

    def encode_query(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
        return vector / np.linalg.norm(vector)


def install() -> None:
    import indexing.embedder as embedder

    def make_inner_model(spec: str, **_: Any) -> StandInModel:
        return StandInModel()

    embedder.make_inner_model = make_inner_model  # type: ignore[assignment]


def main() -> int:
    install()
    from assistant.cli.main import main as brain_main

    return int(brain_main(sys.argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
