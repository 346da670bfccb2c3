"""second-brain's core: config, retrieval, memory and chat, usable without the TUI."""

__version__ = "0.1.0"
