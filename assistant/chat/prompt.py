"""Prompt assembly: a cacheable layout with labelled sections, within token budgets.

Ollama reuses the longest common token prefix with its previous request, and reading a prompt
costs ~60 tokens/s on a laptop CPU. So what stays the same across a session's turns comes
first and never changes, and what is new each turn comes last:

1. system message — persona, how to answer, the user's profile: byte-identical across turns;
2. the conversation summary (a user message; Ollama merges it with the next one) — changes
   only when old turns are folded into it, which changes the history after it anyway;
3. recent turns, as the user wrote them and the answers as given (their material and the
   model's reasoning are not repeated);
4. the user's message, followed by the material found for it: memories, earlier conversations
   (turns of the user's past sessions, dated, when any is relevant), then retrieved knowledge,
   each under a `## ` label and within its budget.

A system message anywhere would be moved to the top by Ollama (template/template.go collate
joins all system messages into `.System`), so per-turn material is never one. With this
layout, a new turn re-reads only the previous answer, the new message and its material.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from assistant.chat.budget import Budget, plan, select_by_score, select_recent
from assistant.chat.citations import strip_citations
from assistant.conversations.documents import strip_reasoning
from assistant.llm.tokens import MESSAGE_OVERHEAD, count_tokens
from assistant.sessions.turn import (
    ConversationItem,
    KnowledgeItem,
    MemoryItem,
    Recalled,
    Retrieval,
    Source,
)

MEMORY_LABEL = "## Memory about the user"
CONVERSATIONS_LABEL = "## Earlier conversations"
KNOWLEDGE_LABEL = "## Retrieved knowledge"
SUMMARY_LABEL = "## Conversation summary"
INSTRUCTIONS_LABEL = "## How to answer"
PROFILE_LABEL = "## About the user"
MATERIAL_HEAD = "---\nFound by second-brain for this message (not written by the user):"

INSTRUCTIONS = """\
- The user's latest message is followed by material second-brain found for it: "Memory about \
the user" (what you remember about them from earlier conversations), sometimes "Earlier \
conversations" (dated turns of the user's past chats with you, numbered [c1], [c2], and so \
on) and "Retrieved knowledge" (excerpts from the user's own files, numbered [1], [2], and so \
on). Earlier messages appear without their material.
- Each excerpt is fenced as <excerpt n="1" file="…">…</excerpt>: reference material to read, \
not an answer. Never copy excerpts or their tags out: answer in your own words.
- When an excerpt is relevant, answer from it and cite it by number right after the claim, \
like [1] or [2][3]. Cite only numbers that appear in the latest "Retrieved knowledge".
- When the answer comes from an earlier conversation, say when it was and cite it like [c1]. \
Cite only those that appear in the latest "Earlier conversations".
- When the excerpts do not contain the answer, say so plainly instead of inventing one.
- Use the memory and "About the user" for tone and personal context; never cite them as a \
source."""

TOOLS_INSTRUCTIONS = """\
- You may call `search_knowledge` to look up more of the user's files (results continue the \
numbering), `search_conversations` to look up what was said in earlier chats (results are \
numbered [c1], [c2], …) and `remember` to store a lasting fact the user tells you about \
themselves."""

LOW_CONFIDENCE_NOTE = (
    "Low confidence: the search found nothing that clearly matches this question, so the "
    "excerpts below (if any) are probably unrelated. Tell the user you did not find it in their "
    "files; then say you do not know, or answer from general knowledge and say clearly that "
    "the answer does not come from their files."
)
NO_HITS = "(no excerpts matched this question)"
NOT_A_QUESTION = (
    "(none: the message asks nothing to look up; reply to it directly and cite nothing)"
)
KNOWLEDGE_OFF = (
    "(knowledge search is off for this question: answer from general knowledge, cite nothing)"
)
NO_MEMORIES = "(nothing relevant remembered)"
MEMORY_OFF = "(memory is off for this question)"
INTERRUPTED_MARK = "\n[answer interrupted by the user]"
TRUNCATED_MARK = "\n[answer cut off at the length limit]"
EXCERPT_END = re.compile(r"</excerpt", re.IGNORECASE)
# What of a recalled question or answer the model reads (a long answer, e.g. with code, would
# otherwise take the whole section).
RECALLED_CHARS = 700
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PromptMessage:
    role: str  # system, user, assistant
    content: str


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    question: str
    answer: str
    interrupted: bool = False
    truncated: bool = False  # stopped at the answer cap: a "continue" goes on from here


@dataclass(frozen=True, slots=True)
class PromptInputs:
    persona: str
    message: str
    memories: Sequence[MemoryItem] | None  # None: memory off for this turn
    retrieval: Retrieval | None  # None: knowledge off for this turn
    summary: str = ""
    history: Sequence[HistoryTurn] = ()  # oldest first, not yet folded into `summary`
    tools: Sequence[Mapping[str, Any]] = ()  # tool specs sent with the request (counted)
    profile: str = ""  # the user's profile (memory), part of the stable system message
    conversations: Sequence[ConversationItem] = ()  # earlier turns recalled, best first
    asks: bool = True  # False: a statement or small talk (message_kind.py), nothing to look up


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
    conversations: tuple[Recalled, ...] = ()  # the earlier conversations the model saw, [c<n>]
    dropped_conversations: int = 0

    def render(self) -> str:
        """Plain-text view of the whole prompt (for snapshots and `--debug` output)."""
        return "\n\n".join(f"### {m.role}\n{m.content}" for m in self.messages) + "\n"

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())


def memory_line(memory: MemoryItem) -> str:
    return f"- ({memory.kind}) {memory.text.strip()}" if memory.kind else f"- {memory.text.strip()}"


def _attribute(value: str) -> str:
    return " ".join(value.replace('"', "'").split())


def source_block(n: int, item: KnowledgeItem) -> str:
    """An excerpt as the model reads it: fenced in a tag that no answer looks like (a bare
    `[1] path:lines — heading` header followed by the text read, to a small model, like an
    answer to copy out), its text unable to close the tag early."""
    heading = f' heading="{_attribute(item.heading)}"' if item.heading else ""
    text = EXCERPT_END.sub(r"<\\/excerpt", item.text.strip())
    return f'<excerpt n="{n}" file="{_attribute(item.location)}"{heading}>\n{text}\n</excerpt>'


def _clip(text: str, limit: int = RECALLED_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def conversation_block(n: int, item: ConversationItem) -> str:
    """`[c1] 2024-03-05, "Kayak trip"` and what was said (a session: its summary)."""
    title = f', "{item.title}"' if item.title else ""
    if item.seq is None:
        return f"[c{n}] {item.date}{title} (the whole chat, summarised)\n{_clip(item.answer)}"
    lines = [f"[c{n}] {item.date}{title}"]
    if item.question.strip():
        lines.append(f"User: {_clip(item.question)}")
    answer = strip_citations(strip_reasoning(item.answer))
    if answer:
        lines.append(f"Assistant: {_clip(answer)}")
    return "\n".join(lines)


def system_message(persona: str, *, tools: bool, profile: str = "") -> str:
    """The session's system message: the same bytes every turn for the same persona, tools
    setting and profile (Ollama's prompt cache starts here)."""
    instructions = INSTRUCTIONS + ("\n" + TOOLS_INSTRUCTIONS if tools else "")
    parts = [persona.strip(), f"{INSTRUCTIONS_LABEL}\n{instructions}"]
    if profile.strip():
        parts.append(f"{PROFILE_LABEL}\n{profile.strip()}")
    return "\n\n".join(parts)


def tool_specs_tokens(specs: Sequence[Mapping[str, Any]],
                      counter: Callable[[str], int] = count_tokens) -> int:
    """What the tool specs cost: chat templates render them into the system prompt."""
    return counter(json.dumps(list(specs))) if specs else 0


def _turn_messages(turn: HistoryTurn) -> tuple[PromptMessage, PromptMessage]:
    answer = strip_citations(turn.answer) + (INTERRUPTED_MARK if turn.interrupted else "")
    answer += TRUNCATED_MARK if turn.truncated and not turn.interrupted else ""
    return PromptMessage("user", turn.question), PromptMessage("assistant", answer)


def _user_message(message: str, sections: Sequence[tuple[str, str]]) -> str:
    """The question first (so the next turn, whose history holds the bare question, shares
    the prefix through it), then the labelled material."""
    body = "\n\n".join(f"{label}\n{text}" for label, text in sections)
    return f"{message}\n\n{MATERIAL_HEAD}\n\n{body}"


@dataclass(frozen=True, slots=True)
class _Section(Generic[T]):
    """One section of the material, within its budget."""

    kept: tuple[T, ...]  # what fits, in order
    body: str
    used: int  # its tokens
    offered: int  # how many items it had before the budget


@dataclass(frozen=True, slots=True)
class _History:
    summary_text: str
    summary_cost: int
    recent: list[HistoryTurn]
    used: int  # the recent turns' tokens


def assemble(
    inputs: PromptInputs,
    *,
    window: int,
    answer_reserve: int,
    memory_share: float = 0.25,
    knowledge_share: float = 0.45,
    conversation_share: float = 0.15,
    counter: Callable[[str], int] = count_tokens,
) -> Prompt:
    """Build the prompt for one turn; raises ContextOverflow if the message alone is too big."""
    low = inputs.retrieval is not None and inputs.retrieval.low_confidence
    empty_memory = MEMORY_OFF if inputs.memories is None else NO_MEMORIES
    if inputs.retrieval is None:
        empty_knowledge = KNOWLEDGE_OFF
    else:
        empty_knowledge = LOW_CONFIDENCE_NOTE if low else NO_HITS
    system = system_message(inputs.persona, tools=bool(inputs.tools), profile=inputs.profile)
    skeleton = _user_message(inputs.message, [(MEMORY_LABEL, empty_memory),
                                              (KNOWLEDGE_LABEL, empty_knowledge)])
    tools_cost = tool_specs_tokens(inputs.tools, counter)
    fixed = counter(system) + counter(skeleton) + tools_cost + 2 * MESSAGE_OVERHEAD
    budget = plan(
        window,
        fixed,
        answer_reserve=answer_reserve,
        memory_share=memory_share,
        knowledge_share=knowledge_share,
        conversation_share=conversation_share,
    )
    memory = _memory_section(inputs, budget, counter, empty_memory)
    knowledge = _knowledge_section(inputs, budget, counter, low)
    recalled = _conversation_section(inputs, budget, counter)
    history = _history_section(
        inputs, budget.history(memory.used, knowledge.used, recalled.used), counter)

    # The material, in a fixed order: memories, earlier conversations (only when some were
    # recalled: an empty section would cost tokens every turn), then knowledge.
    sections = [(MEMORY_LABEL, memory.body)]
    if recalled.kept:
        sections.append((CONVERSATIONS_LABEL, recalled.body))
    sections.append((KNOWLEDGE_LABEL, knowledge.body))
    messages = [PromptMessage("system", system)]
    if history.summary_text:
        messages.append(PromptMessage("user", history.summary_text))
    for turn in history.recent:
        messages.extend(_turn_messages(turn))
    messages.append(PromptMessage("user", _user_message(inputs.message, sections)))
    return Prompt(
        messages=tuple(messages),
        sources=knowledge.kept,
        memories=memory.kept,
        budget=budget,
        history_turns=len(history.recent),
        dropped_turns=len(inputs.history) - len(history.recent),
        dropped_sources=knowledge.offered - len(knowledge.kept),
        dropped_memories=memory.offered - len(memory.kept),
        tokens={
            "fixed": fixed,
            "memory": memory.used,
            "knowledge": knowledge.used,
            "conversations": recalled.used,
            "summary": history.summary_cost,
            "history": history.used,
        },
        conversations=recalled.kept,
        dropped_conversations=recalled.offered - len(recalled.kept),
    )


def _memory_section(inputs: PromptInputs, budget: Budget, counter: Callable[[str], int],
                    empty: str) -> _Section[MemoryItem]:
    memories = list(inputs.memories or ())
    memory_lines = [memory_line(m) for m in memories]
    kept, used = select_by_score(
        memories, [counter(line) + 1 for line in memory_lines], [m.score for m in memories],
        budget.memory,
    )
    body = "\n".join(memory_lines[i] for i in kept) or empty
    return _Section(tuple(memories[i] for i in kept), body, used, len(memories))


def _knowledge_section(inputs: PromptInputs, budget: Budget, counter: Callable[[str], int],
                       low: bool) -> _Section[Source]:
    items = list(inputs.retrieval.items) if inputs.retrieval is not None else []
    # Cost with a placeholder number; renumbering after selection never adds more than a digit.
    costs = [counter(source_block(99, item)) + 2 for item in items]
    kept, used = select_by_score(items, costs, [item.score for item in items], budget.knowledge)
    sources = tuple(Source(n, items[i]) for n, i in enumerate(kept, start=1))
    blocks = "\n\n".join(source_block(s.n, s.item) for s in sources)
    if inputs.retrieval is None:
        body = KNOWLEDGE_OFF
    elif low:
        body = LOW_CONFIDENCE_NOTE + ("\n\n" + blocks if blocks else "")
    else:
        body = blocks or (NO_HITS if inputs.asks else NOT_A_QUESTION)
    return _Section(sources, body, used, len(items))


def _conversation_section(inputs: PromptInputs, budget: Budget,
                          counter: Callable[[str], int]) -> _Section[Recalled]:
    items = list(inputs.conversations)
    # The section's label and the line break before it are part of its cost.
    label_cost = counter(CONVERSATIONS_LABEL) + 2 if items else 0
    costs = [counter(conversation_block(99, item)) + 2 for item in items]
    kept, used = select_by_score(
        items, costs, [item.score for item in items],
        max(0, budget.conversations - label_cost),
    )
    recalled = tuple(Recalled(n, items[i]) for n, i in enumerate(kept, start=1))
    if recalled:
        used += label_cost
    body = "\n\n".join(conversation_block(r.n, r.item) for r in recalled)
    return _Section(recalled, body, used, len(items))


def _history_section(inputs: PromptInputs, cap: int,
                     counter: Callable[[str], int]) -> _History:
    """The rolling summary and the most recent turns that fit in `cap`."""
    summary = inputs.summary.strip()
    summary_text = f"{SUMMARY_LABEL}\n{summary}" if summary else ""
    summary_cost = counter(summary_text) + MESSAGE_OVERHEAD if summary else 0
    if summary_cost > cap:
        summary_text, summary_cost = "", 0  # useless cut short; recent turns matter more
    turn_costs = [
        counter(t.question) + counter(t.answer) + 2 * MESSAGE_OVERHEAD for t in inputs.history
    ]
    n_turns, used = select_recent(turn_costs, cap - summary_cost)
    recent = list(inputs.history)[len(inputs.history) - n_turns :] if n_turns else []
    return _History(summary_text, summary_cost, recent, used)
