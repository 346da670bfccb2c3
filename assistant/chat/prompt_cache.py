"""Keeping the server's prompt cache on the conversation.

Ollama reuses the longest common prefix of the previous request, so a turn re-reads only what
is new — unless a background request (extraction, a summary) came in between and replaced the
chat's prefix. `PromptCache` remembers what our last request left there (for the estimate of
the tokens a turn has to read, shown while waiting), and `warm()` has the server read the
conversation's opening again after such a request, while the user is still reading.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from assistant.chat.prompt import PromptInputs, PromptMessage, assemble
from assistant.chat.recital import history_turn
from assistant.chat.turn_context import TurnContext, facts_quiet
from assistant.chat.turn_prompt import engine_tools
from assistant.llm.models import ModelFacts
from assistant.llm.thinking import think_value
from assistant.llm.tokens import MESSAGE_OVERHEAD
from assistant.sessions.turn import Session, Turn

Sent = tuple[str, int, list[tuple[str, str]]]  # (model, num_ctx, messages)
# The current session and its recent turns, read off the event loop.
Conversation = Callable[[], Awaitable[tuple[Session | None, list[Turn]]]]


class PromptCache:
    def __init__(self, context: Callable[[], TurnContext], conversation: Conversation) -> None:
        self._context = context
        self._conversation = conversation
        self.last_sent: Sent | None = None  # what the server's cache holds after our request
        self.dirty = False  # a background request replaced the chat's cached prefix
        self.profile = ""  # the profile text of the last turn (in the opening's system message)

    def uncached_tokens(self, ctx: TurnContext, messages: Sequence[PromptMessage], window: int,
                        last: Sent | None) -> int:
        """About how many prompt tokens Ollama has to read: those after the longest common
        prefix (in whole messages) with what our previous request (`last`) left in its
        cache."""
        start = 0
        if last is not None and last[0] == ctx.settings.model and last[1] == window:
            for sent, message in zip(last[2], messages, strict=False):
                if sent != (message.role, message.content):
                    break
                start += 1
        count = ctx.counter()
        return sum(count(m.content) + MESSAGE_OVERHEAD for m in messages[start:])

    def answered(self, model: str, window: int, messages: Sequence[PromptMessage],
                 answer: str) -> None:
        """A turn's request and its answer: what the server's cache now holds."""
        self.last_sent = (model, window,
                          [*((m.role, m.content) for m in messages), ("assistant", answer)])

    async def warm(self) -> None:
        """After background requests (Ollama keeps one prompt in its cache, and theirs replaced
        the chat's), have Ollama read the conversation's opening again — what the next turn
        will start with — while the user is still reading: one generated token, cancelled if
        a question comes first. The next turn then reads only the last answer and what is
        new, instead of the whole conversation."""
        if not self.dirty:
            return
        ctx = self._context()
        settings = ctx.settings
        loop = asyncio.get_running_loop()
        facts = await loop.run_in_executor(None, facts_quiet, ctx.catalog, settings.model)
        window = ctx.window(facts)
        session, history = await self._conversation()
        messages = self.opening(ctx, facts, window, session, history)
        think = think_value(settings.think, facts.capabilities if facts is not None else ())
        await ctx.transport.complete(
            settings.model, [{"role": m.role, "content": m.content} for m in messages],
            num_ctx=window, keep_alive=settings.keep_alive, num_predict=1, think=think,
            temperature=settings.temperature,
        )
        self.dirty = False
        self.last_sent = (settings.model, window, [(m.role, m.content) for m in messages])

    def opening(self, ctx: TurnContext, facts: ModelFacts | None, window: int,
                session: Session | None, history: list[Turn]) -> list[PromptMessage]:
        """What the next turn's prompt will start with: the system message, the summary, the
        recent turns with the last answer, then an empty user message — the next turn's own
        message opens the same way, so the server's cache holds everything before its text.
        (Ending on the answer instead would have it taken as a reply to continue; ending on
        the last question, as before, left the last answer to be read again by every
        `ask -c`: 53% of a real third turn cached.)"""
        settings = ctx.settings
        tools_on = settings.tools and facts is not None and facts.supports_tools
        prompt = assemble(
            PromptInputs(
                persona=settings.persona, message="", memories=None, retrieval=None,
                summary=session.summary if session is not None else "",
                history=[history_turn(t) for t in history],
                tools=engine_tools(ctx) if tools_on else (), profile=self.profile,
            ),
            window=window, answer_reserve=settings.answer_reserve,
            memory_share=settings.memory_share, knowledge_share=settings.knowledge_share,
            counter=ctx.counter(),
        )
        # The new message's place, empty: without its material (the turn's own), which
        # would not match what the next turn sends.
        return [*prompt.messages[:-1], PromptMessage("user", "")]
