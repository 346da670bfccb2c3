"""A turn's second stage: the prompt (prompt.py) from what was gathered, the session's rolling
summary and its recent turns; what the turn then shows as `Retrieved`.

The tool list is the same every turn (and in the warm-up prompt, prompt_cache.py): the tools
are part of the prompt prefix Ollama caches.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assistant.chat.events import Retrieved
from assistant.chat.prompt import Prompt, PromptInputs, assemble
from assistant.chat.recital import history_turn
from assistant.chat.sources import MemorySource
from assistant.chat.tools import tool_specs
from assistant.chat.turn_context import TurnContext
from assistant.chat.turn_gather import Gathered
from assistant.chat.turn_state import TurnState
from assistant.llm.thinking import think_value
from assistant.sessions.turn import Session, Turn

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Prepared:
    prompt: Prompt
    window: int  # the request's num_ctx
    think: bool | None  # the request's `think` (thinking.think_value)
    tools_on: bool  # the model is offered the tools


def engine_tools(ctx: TurnContext) -> list[dict[str, Any]]:
    return tool_specs(conversations=ctx.conversations is not None)


def prepare(ctx: TurnContext, state: TurnState, found: Gathered, session: Session,
            history: Sequence[Turn]) -> Prepared:
    """Assemble the turn's prompt and note what it holds in `state`; raises ContextOverflow
    when the message alone does not fit."""
    settings = ctx.settings
    facts = found.facts
    window = ctx.window(facts)
    think = think_value(settings.think, facts.capabilities if facts is not None else ())
    tools_on = settings.tools and facts is not None and facts.supports_tools
    t_assembly = time.perf_counter()
    recollection = found.recollection
    prompt = assemble(
        PromptInputs(
            persona=settings.persona,
            message=state.message,
            memories=found.recalled,
            retrieval=found.retrieval,
            summary=session.summary,
            history=[history_turn(t) for t in history],
            tools=engine_tools(ctx) if tools_on else (),
            profile=found.profile,
            conversations=recollection.items if recollection is not None else (),
            asks=found.kind == "question",
        ),
        window=window,
        answer_reserve=settings.answer_reserve,
        memory_share=settings.memory_share,
        knowledge_share=settings.knowledge_share,
        conversation_share=settings.conversation_share,
        counter=ctx.counter(),
    )
    state.ms("assembly_ms", t_assembly)
    state.prompt = prompt
    state.sources = list(prompt.sources)
    state.conversations = list(prompt.conversations)
    state.memories = found.profile_items + prompt.memories
    if prompt.memories and ctx.memory is not None:
        _mark_used(ctx, ctx.memory, [m.memory_id for m in prompt.memories])
    state.low_confidence = bool(found.retrieval and found.retrieval.low_confidence)
    state.timings["window"] = window
    state.timings["prompt_tokens"] = prompt.total_tokens
    return Prepared(prompt, window, think, tools_on)


def retrieved(found: Gathered, state: TurnState, prompt: Prompt) -> Retrieved:
    """What the answer is drawn from, shown before it streams."""
    retrieval, recollection = found.retrieval, found.recollection
    return Retrieved(
        prompt.sources, state.memories, state.low_confidence,
        knowledge_used=retrieval is not None, memory_used=found.recalled is not None,
        log_id=state.log_id, noted=found.noted,
        empty_index=bool(retrieval and retrieval.empty_index),
        warnings=(retrieval.warnings if retrieval is not None else ()) + found.refused
        + (recollection.warnings if recollection is not None else ()),
        conversations=prompt.conversations, conversations_used=recollection is not None,
        time_range=recollection.time_range if recollection is not None else None,
        time_range_applied=recollection.applied if recollection is not None else True,
    )


def _mark_used(ctx: TurnContext, memory: MemorySource, ids: list[str]) -> None:
    """Off the answer's path, on the memory thread (SQLite); a failure is only logged."""
    def done(future: asyncio.Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("could not mark memories as used: %s", future.exception())

    asyncio.get_running_loop().run_in_executor(
        ctx.pools.memory, memory.used, ids
    ).add_done_callback(done)
