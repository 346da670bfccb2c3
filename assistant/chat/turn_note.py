"""A turn that is an explicit "remember that …": done, not asked. The memory stored (or why it
was refused, e.g. a secret) is confirmed directly instead of sending the model a question it
would try to answer from documents; the turn is then stored as complete."""

from __future__ import annotations

from collections.abc import Callable

from assistant.chat.events import ChatEvent, Retrieved, Token
from assistant.chat.turn_gather import Gathered
from assistant.chat.turn_state import TurnState

REMEMBERED = "Remembered: {text}"
NOT_REMEMBERED = "Not remembered: {reason}"


def is_note(found: Gathered) -> bool:
    return found.noted is not None or bool(found.refused)


def acknowledge(state: TurnState, emit: Callable[[ChatEvent], None], found: Gathered) -> None:
    """The confirmation as the turn's answer (shown and kept in `state`)."""
    noted, refused, retrieval = found.noted, found.refused, found.retrieval
    if noted is not None:
        reply = REMEMBERED.format(text=noted.text)
    else:
        reason = refused[0]
        while reason.lower().startswith("not remembered: "):
            reason = reason[len("not remembered: "):]
        reply = NOT_REMEMBERED.format(reason=reason)
    emit(Retrieved((), (noted,) if noted is not None else (), False,
                   knowledge_used=False, memory_used=True, log_id=state.log_id,
                   noted=noted,
                   warnings=(retrieval.warnings if retrieval is not None else ()) + refused))
    state.memories = (noted,) if noted is not None else ()  # the memory in play
    state.parts.append(reply)
    emit(Token(reply))
