"""A turn's third stage: the answer streamed from the model (reply.py), with the tool loop —
a round that asks for tools gets their results (each run on its store's thread) and is followed
by another round, MAX_TOOL_ROUNDS at most; the last round is the answer.

The first round's prompt is the one assembled: what the server counted for it calibrates our
token estimate for the model (calibration.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from assistant.chat.budget import answer_cap
from assistant.chat.calibration import prompt_split
from assistant.chat.events import Emit, ToolCalled
from assistant.chat.prompt import Prompt, PromptMessage
from assistant.chat.reply import ReplyReader, WaitInfo
from assistant.chat.tools import MAX_TOOL_ROUNDS, run_tool
from assistant.chat.turn_context import TurnContext
from assistant.chat.turn_gather import Gathered
from assistant.chat.turn_prompt import Prepared, engine_tools
from assistant.chat.turn_state import TurnState, note_stats
from assistant.llm import errors
from assistant.llm.tokens import MESSAGE_OVERHEAD
from assistant.sessions.turn import Recollection, Retrieval
from indexing.llama_import import load_llama_index, load_llama_index_async

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Generation:
    """One generation: where it runs and what it may call."""

    ctx: TurnContext
    state: TurnState
    emit: Emit
    prepared: Prepared
    found: Gathered
    session_id: str


async def generate(turn: Generation, new_tokens: Callable[[], int]) -> None:
    """Stream the answer into `turn.state` (and as events), tool rounds included."""
    ctx, state, prepared = turn.ctx, turn.state, turn.prepared
    settings, prompt, facts = ctx.settings, prepared.prompt, turn.found.facts
    await load_llama_index_async()  # the messages' type; never imported on the loop itself
    llm = ctx.transport.llm(model=settings.model, window=prepared.window, think=prepared.think,
                            temperature=settings.temperature, keep_alive=settings.keep_alive,
                            num_predict=answer_cap(settings.max_answer_tokens, prompt.budget))
    messages = [_chat_message(m) for m in prompt.messages]
    rounds = MAX_TOOL_ROUNDS if prepared.tools_on else 0
    think = prepared.think
    untagged = think is False and facts is not None and facts.thinking_only

    def saw_untagged() -> None:
        if think is not True:
            ctx.catalog.saw_untagged_reasoning(settings.model)

    while True:
        reader = ReplyReader(
            emit=turn.emit, sink=state, timeout=settings.timeout,
            first_token_timeout=settings.first_token_timeout, untagged=untagged,
            probe=ctx.transport.running,
            wait=WaitInfo(settings.host, settings.model, new_tokens, prepared.window,
                          errors.server_words(settings.provider)),
            on_untagged=saw_untagged,
        )
        kwargs: dict[str, Any] = {"tools": engine_tools(ctx)} if rounds > 0 else {}
        if "overhead_ms" not in state.timings:
            state.ms("overhead_ms")  # enter → the request leaves for Ollama
        end = await reader.read(await llm.astream_chat(messages, **kwargs))
        if not messages[len(prompt.messages):]:  # the first round: the prompt as assembled
            _calibrate(ctx, prompt, kwargs.get("tools", ()), end.raw, prepared.window)
        note_stats(state, end.raw)
        # The last round decides: a tool round cut short is followed by a full answer.
        state.truncated = end.truncated
        if not end.tool_calls:
            break
        rounds -= 1
        messages.append(_assistant_tool_message(end.tool_calls))
        await _call_tools(turn, end.tool_calls, messages)
    if state.truncated:
        log.info("answer stopped at the length limit")


async def _call_tools(turn: Generation, calls: list[tuple[str, dict[str, Any]]],
                      messages: list[Any]) -> None:
    """Run the round's tool calls in order; their results go back to the model."""
    ctx, state, found = turn.ctx, turn.state, turn.found
    loop = asyncio.get_running_loop()
    pools = {"search_knowledge": ctx.pools.knowledge,
             "search_conversations": ctx.pools.conversations}
    for name, arguments in calls:
        room = _room_left(ctx, turn.prepared.prompt, messages)
        outcome = await loop.run_in_executor(
            pools.get(name, ctx.pools.memory),
            partial(run_tool, name, arguments, next_n=len(state.sources) + 1,
                    search=partial(_tool_search, ctx) if found.knowledge_on else None,
                    remember=partial(_tool_remember, ctx, turn.session_id, state.message)
                    if found.memory_on else None,
                    known=state.sources, max_tokens=room,
                    search_conversations=partial(_tool_conversations, ctx, turn.session_id)
                    if found.conversations_on else None,
                    recalled=state.conversations),
        )
        state.tools.append(outcome.use)
        state.sources.extend(outcome.sources)
        state.conversations.extend(outcome.conversations)
        turn.emit(ToolCalled(outcome.use, outcome.sources, outcome.conversations))
        messages.append(_tool_message(name, outcome.content))


def _calibrate(ctx: TurnContext, prompt: Prompt, tools: Sequence[Any],
               raw: dict[str, Any], window: int) -> None:
    """One sample for the model's token factors: what the server counted for the prompt
    as we assembled it. A prompt the server had to cut (it reports at most the window)
    says nothing about the tokenizer."""
    real = raw.get("prompt_eval_count")
    if not isinstance(real, int) or isinstance(real, bool) or real >= window - 1:
        return
    split = prompt_split((m.content for m in prompt.messages), tools)
    ctx.calibration.observe(ctx.settings.model, split, real)


def _room_left(ctx: TurnContext, prompt: Prompt, messages: list[Any]) -> int:
    """Tokens still free for tool results, after the prompt and earlier tool rounds."""
    count = ctx.counter()
    extra = sum(
        count(m.content or "") + MESSAGE_OVERHEAD
        for m in messages[len(prompt.messages):]
    )
    budget = prompt.budget
    return max(0, budget.window - budget.answer_reserve - prompt.total_tokens - extra)


# --- the tools' sides (blocking, on their stores' threads) -----------------------------------

def _tool_search(ctx: TurnContext, query: str, top_k: int) -> Retrieval:
    assert ctx.knowledge is not None
    return ctx.knowledge.search(query, top_k=top_k)


def _tool_conversations(ctx: TurnContext, session_id: str, query: str, since: str | None,
                        until: str | None, top_k: int) -> Recollection:
    assert ctx.conversations is not None
    return ctx.conversations.search(query, since=since, until=until,
                                    session_id=session_id, top_k=top_k)


def _tool_remember(ctx: TurnContext, session_id: str, message: str, text: str,
                   kind: str) -> str:
    """The `remember` tool: grounded in what the user said in this session (all of it, not
    only the turns still in the prompt), the current message included."""
    assert ctx.memory is not None
    said = [t.question for t in ctx.store.turns(session_id)] + [message]
    return ctx.memory.remember(text, kind, session_id=session_id, said=said)


# --- llama_index messages --------------------------------------------------------------------

def _chat_message(message: PromptMessage) -> Any:
    load_llama_index()
    from llama_index.core.llms import ChatMessage

    return ChatMessage(role=message.role, content=message.content)


def _assistant_tool_message(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """The assistant's tool-call message sent back: the calls only, never its reasoning."""
    load_llama_index()
    from llama_index.core.base.llms.types import TextBlock, ToolCallBlock
    from llama_index.core.llms import ChatMessage

    blocks: list[Any] = [TextBlock(text="")]
    blocks += [ToolCallBlock(tool_name=name, tool_kwargs=args) for name, args in calls]
    return ChatMessage(role="assistant", blocks=blocks)


def _tool_message(name: str, content: str) -> Any:
    load_llama_index()
    from llama_index.core.llms import ChatMessage

    return ChatMessage(role="tool", content=content, additional_kwargs={"tool_name": name})
