"""Token budgets for the prompt's sections, from the model's context window.

The fixed part (system prompt, instructions, the user's message) always goes in. Of the window,
memory may use at most `memory_share` (25%), knowledge at most `knowledge_share` (45%) and
recalled earlier conversations at most `conversation_share` (15%, from what memory and knowledge
leave); the session's own history gets whatever is left after the answer reserve, so budget that
the material did not need flows to history. Items are whole: when a section is over budget the
lowest-scoring items are dropped, never cut in the middle (a half chunk cited as [2] would be a
misquote).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from assistant.config import MIN_ANSWER_TOKENS

T = TypeVar("T")


class ContextOverflow(Exception):
    """The message alone does not fit in the model's context window."""

    def __init__(self, needed: int, available: int, window: int) -> None:
        super().__init__(
            f"the message needs about {needed} tokens but only {available} of the model's "
            f"{window}-token context window are available"
        )
        self.needed = needed
        self.available = available
        self.window = window


@dataclass(frozen=True, slots=True)
class Budget:
    window: int  # the context length Ollama is asked to use (num_ctx)
    answer_reserve: int  # tokens kept free for the answer
    fixed: int  # system prompt + instructions + user message, always included
    memory: int  # cap for the memory section
    knowledge: int  # cap for the knowledge section
    conversations: int = 0  # cap for the earlier-conversations section

    @property
    def free(self) -> int:
        """Tokens for memory + knowledge + history together."""
        return self.window - self.answer_reserve - self.fixed

    def history(self, memory_used: int, knowledge_used: int, conversations_used: int = 0) -> int:
        """History gets the rest, after what the material actually used."""
        return max(0, self.free - memory_used - knowledge_used - conversations_used)


def plan(
    window: int,
    fixed: int,
    *,
    answer_reserve: int,
    memory_share: float = 0.25,
    knowledge_share: float = 0.45,
    conversation_share: float = 0.0,
) -> Budget:
    """Section caps for a `window`-token context whose fixed part takes `fixed` tokens.

    Raises ContextOverflow when the fixed part does not fit next to the answer reserve.
    """
    if window <= 0:
        raise ValueError(f"context window must be positive, got {window}")
    # A reserve of half the window or more would leave nothing for the question on small models.
    reserve = max(0, min(answer_reserve, window // 4))
    free = window - reserve - fixed
    if free < 0:
        raise ContextOverflow(needed=fixed, available=window - reserve, window=window)
    memory = min(int(window * memory_share), free)
    knowledge = max(0, min(int(window * knowledge_share), free - memory))
    conversations = max(0, min(int(window * conversation_share), free - memory - knowledge))
    return Budget(window, reserve, fixed, memory, knowledge, conversations)


def answer_cap(max_answer_tokens: int, budget: Budget) -> int:
    """The answer's `num_predict`: the configured cap (0: the answer reserve), never more than
    the reserve this prompt actually left (a small window gets a smaller one, see `plan`) —
    past it the answer would push the prompt's start out of the context — and never fewer
    than MIN_ANSWER_TOKENS (a reserve of 0 must not mean an empty answer)."""
    cap = min(max_answer_tokens or budget.answer_reserve, budget.answer_reserve)
    return max(cap, MIN_ANSWER_TOKENS)


def select_by_score(
    items: Sequence[T], costs: Sequence[int], scores: Sequence[float], cap: int
) -> tuple[list[int], int]:
    """Indices of the items to keep (in their original order) and the tokens they use.

    Items are considered best score first; one that does not fit is dropped and smaller,
    lower-scoring ones may still fill the remaining room.
    """
    order = sorted(range(len(items)), key=lambda i: (-scores[i], i))
    kept: list[int] = []
    used = 0
    for i in order:
        if used + costs[i] <= cap:
            kept.append(i)
            used += costs[i]
    return sorted(kept), used


def select_recent(costs_oldest_first: Sequence[int], cap: int) -> tuple[int, int]:
    """How many of the most recent items fit in `cap` (a contiguous newest suffix) and tokens.

    History is kept contiguous: skipping a long old turn but keeping an older one would make
    the conversation read out of order.
    """
    used = 0
    count = 0
    for cost in reversed(costs_oldest_first):
        if used + cost > cap:
            break
        used += cost
        count += 1
    return count, used
