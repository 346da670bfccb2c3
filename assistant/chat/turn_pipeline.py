"""One turn, as a pipeline of stages that take and return values: gather (turn_gather.py) →
prompt (turn_prompt.py) → generate with the tool loop (turn_generate.py) → store
(turn_store.py); then the background work after it is scheduled. And what a failure at any
stage becomes: the turn stored as failed (or interrupted), with the error as the user reads it.

The session's reads run on the sessions thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from assistant.chat.background_scheduler import BackgroundScheduler
from assistant.chat.budget import ContextOverflow
from assistant.chat.current_session import CurrentSession
from assistant.chat.events import Emit, Failed
from assistant.chat.prompt_cache import PromptCache
from assistant.chat.retrieval_history import retrieval_history
from assistant.chat.turn_context import TurnContext
from assistant.chat.turn_gather import gather
from assistant.chat.turn_generate import Generation, generate
from assistant.chat.turn_note import acknowledge, is_note
from assistant.chat.turn_prompt import prepare, retrieved
from assistant.chat.turn_state import TurnState, estimate_read_tokens
from assistant.chat.turn_store import TurnRecorder, report
from assistant.errors import UserError
from assistant.llm import errors
from assistant.llm.errors import ChatError
from assistant.sessions.turn import Session, Turn

RETRIEVAL_HISTORY_TURNS = 3  # earlier user messages given to the retriever for follow-ups



@dataclass(frozen=True, slots=True)
class TurnPipeline:
    """The engine's parts a turn goes through (the engine's own, shared between turns)."""

    current: CurrentSession
    cache: PromptCache
    recorder: TurnRecorder
    background: BackgroundScheduler

    async def run(self, ctx: TurnContext, state: TurnState, emit: Emit,
                  use_knowledge: bool, use_memory: bool) -> None:
        """The turn, stored however it ends."""
        recorder = self.recorder
        try:
            await self._stages(ctx, state, emit, use_knowledge, use_memory)
        except asyncio.CancelledError:
            await recorder.interrupted(state, emit)
        except ChatError as exc:
            await recorder.failed(state, emit, exc)
        except (UserError, sqlite3.Error) as exc:
            failed = errors.not_saved(exc, ctx.store.path)
            if state.recorded:  # storing the turn itself failed: it cannot be stored as failed
                report(state, emit, Failed(failed, state.answer, None))
            else:
                await recorder.failed(state, emit, failed)
        except ContextOverflow as exc:
            await recorder.failed(state, emit, errors.context_overflow(str(exc)))
        except Exception as exc:  # the turn is stored as failed; map_error logs a bug's traceback
            settings = ctx.settings
            error = errors.map_error(
                exc, host=settings.host, model=state.model, timeout_s=settings.timeout,
                streaming=state.streaming, server=errors.server_words(settings.provider),
            )
            await recorder.failed(state, emit, error)

    async def _stages(self, ctx: TurnContext, state: TurnState, emit: Emit,
                      use_knowledge: bool, use_memory: bool) -> None:
        """gather → prompt → generate → store; then the background work is scheduled."""
        session, history = await asyncio.get_running_loop().run_in_executor(
            ctx.pools.sessions, lambda: self._conversation(ctx.settings.model))
        found = await gather(ctx, state, session.id,
                             retrieval_history(history, RETRIEVAL_HISTORY_TURNS),
                             use_knowledge=use_knowledge, use_memory=use_memory)
        if found.recalled is not None:
            self.cache.profile = found.profile  # (for warming the cache)
        if is_note(found):
            acknowledge(state, emit, found)
            turn = await self.recorder.complete(state, emit)
            self.background.after_turn(turn.session_id, 0)
            return
        prepared = prepare(ctx, state, found, session, history)
        prompt = prepared.prompt
        # Counted only once the request is out (tokenizing the new material takes a few ms).
        last_sent = self.cache.last_sent
        new_tokens = _once(lambda: self.cache.uncached_tokens(
            ctx, prompt.messages, prepared.window, last_sent))
        emit(retrieved(found, state, prompt))
        await generate(Generation(ctx, state, emit, prepared, found, session.id), new_tokens)
        state.timings["prompt_new_tokens"] = new_tokens()
        estimate_read_tokens(state.timings)
        self.cache.answered(ctx.settings.model, prepared.window, prompt.messages, state.answer)
        turn = await self.recorder.complete(state, emit)
        self.background.after_turn(turn.session_id, prompt.dropped_turns)

    def _conversation(self, model: str) -> tuple[Session, list[Turn]]:
        """The session (created with `model` if there is none) and the turns its prompt
        shows. Blocking: on the sessions thread."""
        session = self.current.ensure(model)
        return session, self.current.history(session)


def _once(compute: Callable[[], int]) -> Callable[[], int]:
    """`compute`, run at the first call only."""
    done: list[int] = []

    def value() -> int:
        if not done:
            done.append(compute())
        return done[0]

    return value
