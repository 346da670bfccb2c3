"""The conversation core: one turn = retrieve ∥ recall → assemble → stream → store."""
