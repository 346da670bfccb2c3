"""What every write of a memory must pass before it is stored (`check_new`)."""

from __future__ import annotations

from dataclasses import replace

from assistant.errors import UserError
from assistant.memory.errors import NotGrounded, SecretRejected
from assistant.memory.grounding import grounding_reason
from assistant.memory.model import Actor, NewMemory
from assistant.memory.secrets import find_secret, find_secret_in


def _clamp01(value: float, name: str) -> float:
    if not 0.0 <= value <= 1.0:
        raise UserError(f"{name} must be between 0 and 1, got {value}")
    return float(value)


def check_new(new: NewMemory, *, actor: Actor, current_key: str | None = None) -> NewMemory:
    """Normalise a memory about to be written; refuse empty text, secrets and, from the
    assistant, anything the user did not say.

    Every write path (add, import, edit, supersede: the CLI, the TUI, extraction, the
    `remember` tool) passes here, so a secret in the text, the key or both together is never
    stored, and a memory the assistant proposes (tool call, extraction) must be grounded in
    the user's own messages of the conversation (`new.evidence`): a document the model read
    never becomes a memory. The user's words it came from (`source_text`) and its search
    context are kept only if they hold no secret either.
    """
    text = " ".join(new.text.split()) if "\n" not in new.text else new.text.strip()
    if not text:
        raise UserError("a memory needs some text")
    key = new.key.strip().lower().replace(" ", "_") if new.key else None
    # The key as given, not lower-cased: a token's case is part of its shape (AKIA…, ghp_…).
    given_key = new.key.strip().replace(" ", "_") if new.key else None
    finding = find_secret_in(text, key=given_key or current_key, said=new.evidence)
    if finding:
        raise SecretRejected(f"not stored: {finding.message()}")
    if actor is Actor.ASSISTANT:
        ungrounded = grounding_reason(text, new.evidence)
        if ungrounded:
            raise NotGrounded(f"not stored: {ungrounded}")
    source_text = new.source_text
    if source_text and find_secret(source_text):
        source_text = None
    context = new.context if not (new.context and find_secret(new.context)) else ""
    return replace(
        new,
        text=text,
        key=key or None,
        source_text=source_text,
        context=context,
        evidence=(),
        confidence=_clamp01(new.confidence, "confidence"),
        importance=_clamp01(new.importance, "importance"),
    )
