"""A turn's first stage: what the answer may draw on — knowledge search ∥ memory recall (and an
explicit "remember that …" stored) ∥ the recall of earlier conversations, each on its own
store's thread, concurrently — and the model's facts.

Ollama is asked first, alone: when it is down (or the model is not pulled) the turn fails in
milliseconds, before the embedding model is loaded for a search nobody will read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from assistant.chat.sources import PROFILE_MEMORY_ID
from assistant.chat.turn_context import TurnContext, facts_or_fail
from assistant.chat.turn_state import TurnState
from assistant.errors import UserError
from assistant.llm import errors
from assistant.llm.models import ModelFacts
from assistant.message_kind import MessageKind, classify, material_for
from assistant.sessions.turn import MemoryItem, Recollection, Retrieval
from indexing.errors import log_failure

log = logging.getLogger(__name__)

Recall = tuple[list[MemoryItem], float, MemoryItem | None, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Gathered:
    kind: MessageKind  # question | statement | small_talk
    facts: ModelFacts | None
    knowledge_on: bool
    memory_on: bool
    conversations_on: bool
    retrieval: Retrieval | None = None  # None: knowledge off
    recalled: list[MemoryItem] | None = None  # None: memory off; the profile left out
    profile_items: tuple[MemoryItem, ...] = ()  # the user's profile (the system message's)
    noted: MemoryItem | None = None  # the explicit memory the message stored
    refused: tuple[str, ...] = ()  # why an explicit one was not stored
    recollection: Recollection | None = None  # None: conversation recall off

    @property
    def profile(self) -> str:
        return self.profile_items[0].text if self.profile_items else ""


async def gather(ctx: TurnContext, state: TurnState, session_id: str,
                 user_history: Sequence[str], *, use_knowledge: bool,
                 use_memory: bool) -> Gathered:
    settings = ctx.settings
    loop = asyncio.get_running_loop()
    knowledge_on = use_knowledge and ctx.knowledge is not None
    memory_on = use_memory and ctx.memory is not None and settings.memory_top_k > 0
    # Earlier conversations are the user's own past words, like memory: off with it.
    conversations_on = (use_memory and ctx.conversations is not None
                        and settings.recall_top_k > 0)
    # Known facts cost nothing (no thread hop on the answer's path).
    facts = ctx.catalog.cached(settings.model) or await loop.run_in_executor(
        None, facts_or_fail, ctx.catalog, settings.model)

    async def nothing() -> None:
        return None

    kind = classify(state.message)
    # Small talk needs nothing from the files: not even the search (message_kind.py).
    searching = knowledge_on and kind != "small_talk"
    pools = ctx.pools
    results = await asyncio.gather(
        loop.run_in_executor(pools.knowledge, _search, ctx, state.message, user_history)
        if searching else nothing(),
        loop.run_in_executor(pools.memory, _recall, ctx, state.message, session_id)
        if memory_on else nothing(),
        loop.run_in_executor(pools.conversations, _recall_conversations, ctx,
                             state.message, session_id)
        if conversations_on else nothing(),
        return_exceptions=True,
    )
    for result in results:  # knowledge's error first, then memory's
        if isinstance(result, BaseException):
            raise result
    searched, recalled, recollection = results
    found = Gathered(kind, facts, knowledge_on, memory_on, conversations_on,
                     recollection=cast("Recollection | None", recollection))
    if found.recollection is not None:
        state.timings["conversations_ms"] = found.recollection.timings.get("total_ms", 0.0)
    found = _with_retrieval(found, state, searched)
    found = _with_memories(found, state, cast("Recall | None", recalled))
    state.ms("prepare_ms")
    return found


def _with_retrieval(found: Gathered, state: TurnState, searched: Any) -> Gathered:
    if searched is not None:
        retrieval, state.timings["retrieval_ms"] = searched
        state.log_id = retrieval.log_id
        return replace(found, retrieval=material_for(found.kind, retrieval))
    if found.knowledge_on:  # small talk: knowledge on, nothing searched
        return replace(found, retrieval=Retrieval(state.message, (), low_confidence=False))
    return found


def _with_memories(found: Gathered, state: TurnState, recall: Recall | None) -> Gathered:
    if recall is None:
        return found
    recalled, state.timings["recall_ms"], noted, refused = recall
    return replace(
        found, noted=noted, refused=refused,
        profile_items=tuple(m for m in recalled if m.memory_id == PROFILE_MEMORY_ID),
        recalled=[m for m in recalled if m.memory_id != PROFILE_MEMORY_ID],
    )


# --- blocking, each on its store's thread ---------------------------------------------------

def _search(ctx: TurnContext, message: str, history: Sequence[str]) -> tuple[Retrieval, float]:
    assert ctx.knowledge is not None
    start = time.perf_counter()
    try:
        result = ctx.knowledge.search(message, history=history, top_k=ctx.settings.top_k)
    except Exception as exc:  # any failure fails the turn as a ChatError (logged there)
        raise errors.stage_failed("knowledge", "knowledge search", exc) from exc
    return result, round((time.perf_counter() - start) * 1000, 2)


def _recall(ctx: TurnContext, message: str, session_id: str) -> Recall:
    """(memories, ms, the explicit memory stored, why one was refused)."""
    assert ctx.memory is not None
    start = time.perf_counter()
    noted = None
    refused: tuple[str, ...] = ()
    try:
        noted = ctx.memory.note(message, session_id=session_id)
    except UserError as exc:  # e.g. a secret in "remember my password is …": not stored
        refused = (f"not remembered: {exc.args[0] if exc.args else exc}",)
    except Exception:  # the question is answered all the same; the bug is in the log
        log.exception("storing an explicit memory failed")
    try:
        result = ctx.memory.recall(message, ctx.settings.memory_top_k)
    except Exception as exc:  # as the knowledge search's
        raise errors.stage_failed("memory", "memory recall", exc) from exc
    elapsed = round((time.perf_counter() - start) * 1000, 2)
    return list(result), elapsed, noted, refused


def _recall_conversations(ctx: TurnContext, message: str, session_id: str) -> Recollection:
    assert ctx.conversations is not None
    start = time.perf_counter()
    try:
        found = ctx.conversations.recall(message, session_id=session_id,
                                         top_k=ctx.settings.recall_top_k)
    except Exception as exc:
        # A convenience, not the question's substance: the answer goes on without it and
        # says so (knowledge and memory failures stop the turn; the user chose those).
        log_failure(log, "recalling earlier conversations failed", exc)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        found = Recollection(message, (), warnings=(
            f"earlier conversations could not be searched: {reason}",))
    elapsed = round((time.perf_counter() - start) * 1000, 2)
    return replace(found, timings={**found.timings, "total_ms": elapsed})
