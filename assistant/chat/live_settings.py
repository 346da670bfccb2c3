"""Which setting changes the running chat can take at once, and which wait for a restart.

The TUI's settings screen writes a change to the config file; what the chat engine reads from
its own settings at every turn (temperature, think, the prompt's budgets…) is applied to the
following turns through `ChatEngine.configure`. Everything else — the model server, the
embedding model, retrieval and indexing, anything another part of the app also read at start —
is said to apply on restart, never half-applied.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from assistant.chat.engine_settings import EngineSettings
from assistant.config import Config

# EngineSettings fields that only the engine reads, each at the turn that uses it.
LIVE_FIELDS = frozenset({
    "think", "temperature", "keep_alive", "tools", "history_turns", "answer_reserve",
    "max_answer_tokens", "conversation_share", "memory_share", "memory_top_k",
})


def live_changes(before: Config, after: Config) -> dict[str, Any] | None:
    """The engine settings to change for `before` → `after` (for `ChatEngine.configure`), or
    None when the change is not (only) the engine's and takes a restart."""
    old, new = EngineSettings.from_config(before), EngineSettings.from_config(after)
    changed = {f.name: getattr(new, f.name) for f in fields(EngineSettings)
               if getattr(old, f.name) != getattr(new, f.name)}
    if not changed or not set(changed) <= LIVE_FIELDS:
        return None
    return changed
