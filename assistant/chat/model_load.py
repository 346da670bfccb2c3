"""The slow first-turn work, done ahead of time (the TUI at start, and after a model change):
the LLM client imported, the model's facts asked, knowledge and memory opened (which loads the
embedding model), and the chat model loaded in the server with the turns' own num_ctx and
keep_alive (another value would make Ollama reload it at the first question)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from assistant.chat.turn_context import TurnContext, facts_or_fail, facts_quiet
from assistant.llm import errors
from assistant.llm.errors import ChatError
from assistant.llm.models import ModelCatalog
from indexing.llama_import import load_llama_index

log = logging.getLogger(__name__)


async def warm_up(ctx: TurnContext) -> None:
    """Everything but the model load, concurrently, each store on its own thread; failures are
    left for the first turn to report."""
    loop = asyncio.get_running_loop()

    def imports() -> None:
        # What the turn needs (its messages' type), through the one lock every llama_index
        # import takes (indexing/llama_import.py: a second entry into its circular imports
        # raced the turn's); llama_index.llms.ollama is not used since the transport speaks
        # Ollama's API itself, and importing it cost the first answer another second.
        load_llama_index()

    def touch(source: object) -> None:
        opener = getattr(source, "warm_up", None)
        if opener is not None:
            opener()

    jobs: list[asyncio.Future[Any]] = [
        loop.run_in_executor(None, imports),
        loop.run_in_executor(None, facts_quiet, ctx.catalog, ctx.settings.model),
    ]
    if ctx.knowledge is not None:
        jobs.append(loop.run_in_executor(ctx.pools.knowledge, touch, ctx.knowledge))
    if ctx.memory is not None:
        jobs.append(loop.run_in_executor(ctx.pools.memory, touch, ctx.memory))
    if ctx.conversations is not None:  # opens the index and catches up with new turns
        jobs.append(loop.run_in_executor(ctx.pools.conversations, touch, ctx.conversations))
    for result in await asyncio.gather(*jobs, return_exceptions=True):
        if isinstance(result, Exception):
            log.info("warm-up: %s", result)


async def load_model(ctx: TurnContext) -> float:
    """Load the session's model now (an empty chat request); the seconds it took. ChatError
    when it cannot be (the server down, the model not pulled)."""
    settings = ctx.settings
    model = settings.model
    facts = await asyncio.get_running_loop().run_in_executor(
        None, facts_or_fail, ctx.catalog, model)
    started = time.perf_counter()
    try:
        await ctx.transport.preload(model, num_ctx=ctx.window(facts),
                                    keep_alive=settings.keep_alive)
    except ChatError:
        raise
    except Exception as exc:  # worded for the user by map_error, which logs a bug's traceback
        raise errors.map_error(exc, host=settings.host, model=model,
                               timeout_s=settings.first_token_timeout,
                               server=errors.server_words(settings.provider)) from exc
    return round(time.perf_counter() - started, 3)


def chat_model(catalog: ModelCatalog, name: str, *, check: bool) -> str:
    """`name` as a model to chat with (stripped). Blocking: with `check`, asks the server that
    it is installed and can chat (ChatError if not); without, a missing model fails the next
    turn instead (which stores the message)."""
    name = name.strip()
    if not name:
        raise ChatError("model_not_found", "the model name is empty", retryable=False)
    facts = catalog.facts(name) if check else None  # raises ChatError
    if facts is not None and facts.capabilities and "completion" not in facts.capabilities:
        raise ChatError(
            "model_not_found", f"{name!r} is not a chat model (it cannot generate text)",
            "choose a chat model from `ollama list`", retryable=False,
        )
    return name
