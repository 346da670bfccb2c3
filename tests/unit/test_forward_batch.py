"""Forward-pass size of local sentence-transformers models: small on CPU, as configured on GPU."""

from __future__ import annotations

from indexing.embedders.sentence import CPU_FORWARD_BATCH, forward_batch


def test_cpu_passes_are_small_but_never_above_the_configured_batch() -> None:
    assert forward_batch("cpu", 64) == CPU_FORWARD_BATCH
    assert forward_batch("cpu", 4) == 4


def test_accelerators_use_the_configured_batch() -> None:
    assert forward_batch("cuda", 64) == 64
    assert forward_batch("mps", 128) == 128
