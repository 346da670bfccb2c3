"""The user profile: a short summary rewritten by the model from the active memories.

A profile the user edited is never replaced silently: the model's rewrite is stored as a
proposal (`pending_text`) and shown as a diff until the user accepts it.
"""

from __future__ import annotations

import difflib
import json
import logging
from dataclasses import dataclass
from typing import Any

from assistant.memory.extraction import ChatFn, json_text
from assistant.memory.model import Actor, MemoryType, Profile
from assistant.memory.secrets import find_secret
from assistant.memory.store import MemoryStore

log = logging.getLogger(__name__)

MAX_PROFILE_CHARS = 600
PROFILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"profile": {"type": "string"}},
    "required": ["profile"],
}
PROMPT = (
    "Write a short profile of the user (at most {limit} characters, plain prose, third "
    "person) from what is known about them below: who they are, what they work on, and how "
    "they like answers. Use only these facts; do not include secrets. Reply with JSON "
    '{{"profile": "…"}}.\n\nKnown about the user:\n{facts}'
)


@dataclass(frozen=True, slots=True)
class ProfileRefresh:
    profile: Profile
    proposed: bool  # True: the user had edited the profile; the rewrite awaits acceptance
    error: str | None = None


def profile_diff(old: str, new: str) -> str:
    return "\n".join(
        difflib.unified_diff(
            old.splitlines() or [""], new.splitlines() or [""],
            "current profile", "proposed rewrite", lineterm="",
        )
    )


def refresh_profile(store: MemoryStore, *, chat_fn: ChatFn) -> ProfileRefresh:
    """Ask the model for a new profile. Never raises for model failures (see `.error`)."""
    memories = store.list()
    order = {MemoryType.PREFERENCE: 0, MemoryType.FACT: 1, MemoryType.PROCEDURE: 2,
             MemoryType.EPISODE: 3}
    memories.sort(key=lambda m: (not m.pinned, order[m.type], -m.importance))
    used = memories[:60]
    facts = "\n".join(f"- {m.text}" for m in used)
    if not facts:
        return ProfileRefresh(store.profile(), False, "no memories yet to build a profile from")
    messages = [{"role": "user", "content": PROMPT.format(limit=MAX_PROFILE_CHARS, facts=facts)}]
    error = None
    for _ in range(2):
        try:
            reply = chat_fn(messages, PROFILE_SCHEMA)
            text = json.loads(json_text(reply)).get("profile")
        # The caller's model call failed (as in extraction: foreseen, one line) or its reply is
        # not a JSON object (json's ValueError, .get on a list's AttributeError).
        except Exception as exc:
            error = f"the model's reply could not be used: {exc}"
            log.warning("profile refresh: %s", error)
            continue
        if not isinstance(text, str) or not text.strip():
            error = "the model returned an empty profile"
            continue
        text = " ".join(text.split())[:MAX_PROFILE_CHARS]
        if find_secret(text):
            return ProfileRefresh(store.profile(), False, "the rewrite contained a secret")
        before = store.profile()
        after = store.set_profile(text, actor=Actor.ASSISTANT, sources=[m.id for m in used])
        return ProfileRefresh(after, proposed=before.edited_by_user)
    return ProfileRefresh(store.profile(), False, error)
