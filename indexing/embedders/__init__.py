"""Concrete embedding models behind `indexing.embedder` (each imports its heavy library lazily)."""
