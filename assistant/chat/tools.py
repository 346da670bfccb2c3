"""Tool-calling mode (ollama.tools): the model may search the knowledge base and the user's
earlier conversations, and store memories.

Three tools, all safe to run without asking: a search is read-only, and a memory is visible
and editable by the user afterwards (and every call is shown to the user as it happens).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assistant.chat.prompt import conversation_block, source_block
from assistant.errors import UserError
from assistant.llm.tokens import count_tokens
from assistant.sessions.turn import Recalled, Recollection, Retrieval, Source, ToolUse
from indexing.errors import log_failure

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 3
MAX_TOP_K = 10
MEMORY_TYPES = ("fact", "preference", "episode", "procedure")  # assistant.memory.MemoryType

TOOL_SPECS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_knowledge",
            "description": (
                "Search the user's indexed notes, documents and code. Returns numbered excerpts "
                "to cite as [n]."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                    "top_k": {
                        "type": "integer",
                        "description": f"How many excerpts (1-{MAX_TOP_K}, default 4).",
                    },
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_conversations",
            "description": (
                "Search the user's earlier chats with you by meaning, words and date. Returns "
                "dated turns numbered [c1], [c2], … to cite."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What was discussed."},
                    "since": {
                        "type": "string",
                        "description": "Only from this date: 2024-03-05, 7d, 2w, 3m, "
                        "'last week' (optional).",
                    },
                    "until": {
                        "type": "string",
                        "description": "Only up to this date, same forms (optional).",
                    },
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "remember",
            "description": (
                "Store a lasting fact about the user (who they are, what they prefer, their "
                "goals) in long-term memory. Only for things the user said about themselves."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The fact, as one sentence."},
                    "type": {"type": "string", "enum": list(MEMORY_TYPES)},
                },
                "required": ["text"],
            },
        },
    },
]


def tool_specs(*, conversations: bool) -> list[dict[str, Any]]:
    """The tools offered: `search_conversations` only where there are conversations to search
    (an engine without a conversation index would only answer it with an error)."""
    return [t for t in TOOL_SPECS
            if conversations or t["function"]["name"] != "search_conversations"]


# `(query, since, until, top_k) -> Recollection`; since/until as typed (flags' forms), checked
# by the callee (a UserError for a bad one).
ConversationSearch = Callable[[str, str | None, str | None, int], Recollection]
CONVERSATION_TOP_K = 4


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    use: ToolUse
    content: str  # what the model reads back
    sources: tuple[Source, ...] = ()
    conversations: tuple[Recalled, ...] = ()  # earlier conversations it added, [c<n>]


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def run_tool(
    name: str,
    arguments: dict[str, Any],
    *,
    next_n: int,
    search: Callable[[str, int], Retrieval] | None,
    remember: Callable[[str, str], str] | None,
    known: Sequence[Source] = (),
    max_tokens: int | None = None,
    counter: Callable[[str], int] = count_tokens,
    search_conversations: ConversationSearch | None = None,
    recalled: Sequence[Recalled] = (),
) -> ToolOutcome:
    """Execute one tool call. Bad arguments and tool failures become a result the model (and the
    user) can read, never an exception that would lose the turn. A search result is kept
    within `max_tokens` (whole excerpts, best first) so it cannot overflow the context."""
    args = arguments if isinstance(arguments, dict) else {}
    try:
        if name == "search_knowledge":
            return _search(args, next_n=next_n, search=search, known=known,
                           max_tokens=max_tokens, counter=counter)
        if name == "search_conversations":
            return _search_conversations(args, search=search_conversations, known=recalled,
                                         max_tokens=max_tokens, counter=counter)
        if name == "remember":
            return _remember(args, remember=remember)
        result = (f"error: unknown tool {name!r} (available: search_knowledge, "
                  "search_conversations, remember)")
    except Exception as exc:  # a failing tool must not end the turn: report it to the model
        log_failure(log, f"tool {name} failed", exc)
        result = f"error: {name} failed: {exc}"
    return ToolOutcome(ToolUse(name, dict(args), result, ok=False), result)


def _search(
    args: dict[str, Any],
    *,
    next_n: int,
    search: Callable[[str, int], Retrieval] | None,
    known: Sequence[Source],
    max_tokens: int | None,
    counter: Callable[[str], int],
) -> ToolOutcome:
    query = str(args.get("query") or "").strip()
    if search is None:
        result = "error: knowledge search is off for this conversation"
        return ToolOutcome(ToolUse("search_knowledge", dict(args), result, ok=False), result)
    if not query:
        result = "error: search_knowledge needs a non-empty `query`"
        return ToolOutcome(ToolUse("search_knowledge", dict(args), result, ok=False), result)
    top_k = max(1, min(MAX_TOP_K, _int(args.get("top_k"), 4)))
    retrieval = search(query, top_k)
    already = {s.item.chunk_id: s for s in known}
    new: list[Source] = []
    blocks: list[str] = []
    n = next_n
    room = max_tokens if max_tokens is not None else -1
    for item in retrieval.items[:top_k]:
        known_source = already.get(item.chunk_id)
        if known_source is not None:  # the model has it already: refer to it, do not repeat
            block = f"[{known_source.n}] {item.location} (shown above)"
        else:
            block = source_block(n, item)
        if max_tokens is not None:
            cost = counter(block) + 2
            if cost > room:
                break  # the rest would overflow the context: results are best-first
            room -= cost
        blocks.append(block)
        if known_source is None:
            new.append(Source(n, item))
            n += 1
    if not blocks:
        content = f"No excerpts found for {query!r}."
    else:
        note = "Low confidence: these may be unrelated.\n\n" if retrieval.low_confidence else ""
        content = note + "\n\n".join(blocks)
    shown = f"{len(blocks)} excerpt(s) for {query!r}" + (
        " (low confidence)" if retrieval.low_confidence and blocks else ""
    )
    return ToolOutcome(
        ToolUse("search_knowledge", {"query": query, "top_k": top_k}, shown), content, tuple(new)
    )


def _search_conversations(
    args: dict[str, Any],
    *,
    search: ConversationSearch | None,
    known: Sequence[Recalled],
    max_tokens: int | None,
    counter: Callable[[str], int],
) -> ToolOutcome:
    name = "search_conversations"
    query = str(args.get("query") or "").strip()
    since = str(args.get("since") or "").strip() or None
    until = str(args.get("until") or "").strip() or None
    if search is None:
        result = "error: conversation search is off for this conversation"
        return ToolOutcome(ToolUse(name, dict(args), result, ok=False), result)
    if not query and since is None and until is None:
        result = "error: search_conversations needs a `query` (or since/until)"
        return ToolOutcome(ToolUse(name, dict(args), result, ok=False), result)
    shown_args = {k: v for k, v in (("query", query), ("since", since), ("until", until)) if v}
    try:
        found = search(query, since, until, CONVERSATION_TOP_K)
    except UserError as exc:  # e.g. a date it could not read: the model may try again
        result = f"error: {exc}"
        return ToolOutcome(ToolUse(name, shown_args, result, ok=False), result)
    already = {r.item.unit_id: r for r in known}
    new: list[Recalled] = []
    blocks: list[str] = []
    n = max((r.n for r in known), default=0) + 1
    room = max_tokens if max_tokens is not None else -1
    for item in found.items:
        seen = already.get(item.unit_id)
        block = (f"[{seen.label}] {item.date} (shown above)" if seen is not None
                 else conversation_block(n, item))
        if max_tokens is not None:
            cost = counter(block) + 2
            if cost > room:
                break  # best first: the rest would overflow the context
            room -= cost
        blocks.append(block)
        if seen is None:
            new.append(Recalled(n, item))
            n += 1
    dates = f" ({found.time_range.describe()})" if found.time_range is not None else ""
    content = "\n\n".join(blocks) if blocks else f"No earlier conversation found{dates}."
    shown = f"{len(blocks)} earlier turn(s) for {query!r}{dates}"
    return ToolOutcome(ToolUse(name, shown_args, shown), content, conversations=tuple(new))


def _remember(args: dict[str, Any], *, remember: Callable[[str, str], str] | None) -> ToolOutcome:
    text = str(args.get("text") or "").strip()
    kind = str(args.get("type") or "fact").strip().lower()
    if remember is None:
        result = "error: memory is off for this conversation"
        return ToolOutcome(ToolUse("remember", dict(args), result, ok=False), result)
    if not text:
        result = "error: remember needs a non-empty `text`"
        return ToolOutcome(ToolUse("remember", dict(args), result, ok=False), result)
    if kind not in MEMORY_TYPES:
        kind = "fact"
    try:
        result = remember(text, kind)
    except UserError as exc:  # refused (a secret, or not something the user said): shown
        refusal = f"not remembered: {exc}"
        return ToolOutcome(ToolUse("remember", {"text": text, "type": kind}, refusal, ok=False),
                           refusal)
    return ToolOutcome(ToolUse("remember", {"text": text, "type": kind}, result), result)

