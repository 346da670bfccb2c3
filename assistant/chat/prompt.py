"""Prompt assembly: labelled sections in a fixed order, within token budgets.

Order: system prompt/persona and instructions → memory about the user → retrieved knowledge
(numbered [1], [2]… with source and heading) → conversation summary → recent turns → the user's
message. The first four are sections of the system message, each under a `## ` label so the
model knows what it is reading; recent turns are real chat messages so the chat template frames
them as the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from assistant.chat.budget import Budget, plan, select_by_score, select_recent
from assistant.chat.citations import strip_citations
from assistant.chat.tokens import MESSAGE_OVERHEAD, count_tokens
from assistant.chat.turn import KnowledgeItem, MemoryItem, Retrieval, Source

MEMORY_LABEL = "## Memory about the user"
KNOWLEDGE_LABEL = "## Retrieved knowledge"
SUMMARY_LABEL = "## Conversation summary"
INSTRUCTIONS_LABEL = "## How to answer"

INSTRUCTIONS = """\
- "Retrieved knowledge" holds excerpts from the user's own files, numbered [1], [2], and so on.
- When an excerpt is relevant, answer from it and cite it by number right after the claim, \
like [1] or [2][3]. Cite only numbers that appear in "Retrieved knowledge".
- When the excerpts do not contain the answer, say so plainly instead of inventing one.
- "Memory about the user" is what you remember about the user from earlier conversations. \
Use it for tone and personal context; never cite it as a source."""

TOOLS_INSTRUCTIONS = """\
- You may call `search_knowledge` to look up more of the user's files (results continue the \
numbering) and `remember` to store a lasting fact the user tells you about themselves."""

LOW_CONFIDENCE_NOTE = (
    "Low confidence: the search found nothing that clearly matches this question, so the "
    "excerpts below (if any) are probably unrelated. Tell the user you did not find it in their "
    "files; then say you do not know, or answer from general knowledge and say clearly that "
    "the answer does not come from their files."
)
NO_HITS = "(no excerpts matched this question)"
KNOWLEDGE_OFF = (
    "(knowledge search is off for this question: answer from general knowledge, cite nothing)"
)
NO_MEMORIES = "(nothing relevant remembered)"
MEMORY_OFF = "(memory is off for this question)"
INTERRUPTED_MARK = "\n[answer interrupted by the user]"


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str  # system, user, assistant
    content: str


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    question: str
    answer: str
    interrupted: bool = False


@dataclass(frozen=True, slots=True)
class PromptInputs:
    persona: str
    message: str
    memories: Sequence[MemoryItem] | None  # None: memory off for this turn
    retrieval: Retrieval | None  # None: knowledge off for this turn
    summary: str = ""
    history: Sequence[HistoryTurn] = ()  # oldest first, not yet folded into `summary`
    tools: bool = False


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: tuple[PromptMessage, ...]
    sources: tuple[Source, ...]  # the numbered excerpts the model saw
    memories: tuple[MemoryItem, ...]  # the memories the model saw
    budget: Budget
    history_turns: int  # how many recent turns were included verbatim
    dropped_turns: int  # older unsummarised turns that did not fit (to be folded)
    dropped_sources: int
    dropped_memories: int
    tokens: dict[str, int] = field(default_factory=dict)

    def render(self) -> str:
        """Plain-text view of the whole prompt (for snapshots and `--debug` output)."""
        return "\n\n".join(f"### {m.role}\n{m.content}" for m in self.messages) + "\n"

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())


def memory_line(memory: MemoryItem) -> str:
    return f"- ({memory.kind}) {memory.text.strip()}" if memory.kind else f"- {memory.text.strip()}"


def source_block(n: int, item: KnowledgeItem) -> str:
    head = f"[{n}] {item.location}"
    if item.heading:
        head += f" — {item.heading}"
    return f"{head}\n{item.text.strip()}"


def _turn_messages(turn: HistoryTurn) -> tuple[PromptMessage, PromptMessage]:
    answer = strip_citations(turn.answer) + (INTERRUPTED_MARK if turn.interrupted else "")
    return PromptMessage("user", turn.question), PromptMessage("assistant", answer)


def _system(
    persona: str,
    tools: bool,
    memory_body: str,
    knowledge_body: str,
    summary: str,
) -> str:
    instructions = INSTRUCTIONS + ("\n" + TOOLS_INSTRUCTIONS if tools else "")
    parts = [
        persona.strip(),
        f"{INSTRUCTIONS_LABEL}\n{instructions}",
        f"{MEMORY_LABEL}\n{memory_body}",
        f"{KNOWLEDGE_LABEL}\n{knowledge_body}",
    ]
    if summary:
        parts.append(f"{SUMMARY_LABEL}\n{summary.strip()}")
    return "\n\n".join(parts)


def assemble(
    inputs: PromptInputs,
    *,
    window: int,
    answer_reserve: int,
    memory_share: float = 0.25,
    knowledge_share: float = 0.45,
    counter: Callable[[str], int] = count_tokens,
) -> Prompt:
    """Build the prompt for one turn; raises ContextOverflow if the message alone is too big."""
    low = inputs.retrieval is not None and inputs.retrieval.low_confidence
    empty_memory = MEMORY_OFF if inputs.memories is None else NO_MEMORIES
    if inputs.retrieval is None:
        empty_knowledge = KNOWLEDGE_OFF
    else:
        empty_knowledge = LOW_CONFIDENCE_NOTE if low else NO_HITS
    skeleton = _system(inputs.persona, inputs.tools, empty_memory, empty_knowledge, "")
    fixed = counter(skeleton) + counter(inputs.message) + 2 * MESSAGE_OVERHEAD
    budget = plan(
        window,
        fixed,
        answer_reserve=answer_reserve,
        memory_share=memory_share,
        knowledge_share=knowledge_share,
    )

    memories = list(inputs.memories or ())
    memory_lines = [memory_line(m) for m in memories]
    kept_m, memory_used = select_by_score(
        memories, [counter(line) + 1 for line in memory_lines], [m.score for m in memories],
        budget.memory,
    )
    kept_memories = tuple(memories[i] for i in kept_m)
    memory_body = "\n".join(memory_lines[i] for i in kept_m) or empty_memory

    items = list(inputs.retrieval.items) if inputs.retrieval is not None else []
    # Cost with a placeholder number; renumbering after selection never adds more than a digit.
    costs = [counter(source_block(99, item)) + 2 for item in items]
    kept_k, knowledge_used = select_by_score(
        items, costs, [item.score for item in items], budget.knowledge
    )
    sources = tuple(Source(n, items[i]) for n, i in enumerate(kept_k, start=1))
    blocks = "\n\n".join(source_block(s.n, s.item) for s in sources)
    if inputs.retrieval is None:
        knowledge_body = KNOWLEDGE_OFF
    elif low:
        knowledge_body = LOW_CONFIDENCE_NOTE + ("\n\n" + blocks if blocks else "")
    else:
        knowledge_body = blocks or NO_HITS

    history_cap = budget.history(memory_used, knowledge_used)
    summary = inputs.summary.strip()
    summary_cost = counter(summary) + 4 if summary else 0
    if summary_cost > history_cap:
        summary, summary_cost = "", 0  # a summary is useless cut short; recent turns matter more
    turn_costs = [
        counter(t.question) + counter(t.answer) + 2 * MESSAGE_OVERHEAD for t in inputs.history
    ]
    n_turns, history_used = select_recent(turn_costs, history_cap - summary_cost)
    recent = list(inputs.history)[len(inputs.history) - n_turns :] if n_turns else []

    system = _system(inputs.persona, inputs.tools, memory_body, knowledge_body, summary)
    messages = [PromptMessage("system", system)]
    for turn in recent:
        messages.extend(_turn_messages(turn))
    messages.append(PromptMessage("user", inputs.message))
    return Prompt(
        messages=tuple(messages),
        sources=sources,
        memories=kept_memories,
        budget=budget,
        history_turns=n_turns,
        dropped_turns=len(inputs.history) - n_turns,
        dropped_sources=len(items) - len(sources),
        dropped_memories=len(memories) - len(kept_memories),
        tokens={
            "fixed": fixed,
            "memory": memory_used,
            "knowledge": knowledge_used,
            "summary": summary_cost,
            "history": history_used,
        },
    )
