"""Conversation-aware retrieval queries.

"and for Chinese files?", "继续" or "that one" mean nothing to a retriever on their own. For
such follow-ups the search query is built from the last user turns plus the new message. Pure
functions: no model needed, so building the query never adds a model call before the first
token (an LLM rewrite was tried and removed: on a one-request-at-a-time local Ollama it costs a
whole generation per follow-up).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_QUERY_CHARS = 600
MAX_CONTEXT_TURNS = 3

# Messages that only ask to go on: the previous topic *is* the query.
_CONTINUATIONS = {
    "continue", "go on", "more", "keep going", "tell me more", "and", "and?", "then", "then?",
    "next", "again", "more please", "please continue",
    "继续", "接着", "接着说", "继续说", "然后", "然后呢", "还有呢", "更多", "再来", "详细点",
    "展开说说",
}
# Openers and words that point back to something said before.
_FOLLOW_UP_OPENERS = (
    "and ", "and,", "also ", "what about", "how about", "same for", "same with", "what if",
    "but ", "or ", "only ", "now ", "instead", "why", "how come",
)
_REFERRING_WORDS = {
    "it", "its", "that", "this", "those", "these", "them", "they", "same", "above",
    "previous", "former", "latter",
}
# Pronouns that nearly always point outside the message, even in a longer one ("how do I
# list its contents without extracting it?" after a tar question): "this"/"that" often point
# inside it ("files in this folder"), so they count in short messages only.
_POINTING_WORDS = {"it", "its", "them", "they", "their"}
MAX_OPENER_WORDS = 16  # "and …" continues the conversation, even as a full sentence
MAX_POINTING_WORDS = 14
MAX_REFERRING_WORDS = 5
_CJK_REFERRING = ("这个", "那个", "这些", "那些", "它", "上面", "刚才", "前面", "上一个", "同样")
_CJK_FOLLOW_UP_ENDINGS = ("呢", "呢？", "呢?")
_CJK_FOLLOW_UP_OPENERS = ("那", "还有", "另外", "而且", "如果", "为什么")
_LATIN_WORD = re.compile(r"[A-Za-z0-9][\w.+#-]*")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_STOP = {
    "a", "an", "the", "is", "are", "was", "do", "does", "did", "i", "you", "me", "my", "to",
    "for", "of", "in", "on", "with", "what", "how", "why", "when", "where", "who", "please",
    "can", "could", "would", "should", "about", "and", "or", "but", "so", "then", "not", "no",
    "yes", "ok", "okay", "thanks", "one",
}


def _normalise(text: str) -> str:
    return " ".join(text.strip().lower().split())


def is_continuation(message: str) -> bool:
    """The message only asks to go on ("continue", "继续")."""
    norm = _normalise(message).rstrip("。.!！")
    return norm in _CONTINUATIONS or norm.rstrip("?？") in _CONTINUATIONS


def is_follow_up(message: str) -> bool:
    """True for short or referring messages that need the earlier turns to be understood."""
    norm = _normalise(message)
    if not norm:
        return False
    if is_continuation(norm):
        return True
    words = [w.lower() for w in _LATIN_WORD.findall(norm)]
    cjk_chars = len(_CJK.findall(norm))
    if cjk_chars:
        if norm.endswith(_CJK_FOLLOW_UP_ENDINGS) or norm.startswith(_CJK_FOLLOW_UP_OPENERS):
            return True
        if any(ref in norm for ref in _CJK_REFERRING):
            return True
    if norm.startswith(_FOLLOW_UP_OPENERS) and len(words) <= MAX_OPENER_WORDS:
        return True
    if any(w in _POINTING_WORDS for w in words) and len(words) <= MAX_POINTING_WORDS:
        return True
    # A pronoun in a long message usually refers inside it ("files in this folder").
    if any(w in _REFERRING_WORDS for w in words) and len(words) <= MAX_REFERRING_WORDS:
        return True
    # Nothing but function words ("why?", "how so") carries no topic of its own.
    content = [w for w in words if w not in _STOP]
    return not content and cjk_chars == 0


def build_search_query(message: str, history: Sequence[str] = ()) -> str:
    """The query to retrieve with: `message` alone, or with the last user turns when it is a
    follow-up. `history` holds earlier *user* messages, oldest first (the chat engine adds to
    the last one the heading of the source its answer cited first: the topic in the files'
    own words, see assistant/chat/retrieval_history.py).
    """
    current = " ".join(message.split())
    if not history or not is_follow_up(current):
        return current[:MAX_QUERY_CHARS]
    context: list[str] = []
    for turn in reversed(history):
        turn = " ".join(turn.split())
        if not turn or is_continuation(turn):
            continue
        context.append(turn)
        # Stop at the first self-contained turn: it holds the topic the follow-ups refer to.
        if not is_follow_up(turn) or len(context) >= MAX_CONTEXT_TURNS:
            break
    if not context:
        return current[:MAX_QUERY_CHARS]
    parts = list(reversed(context))
    if not is_continuation(current):
        parts.append(current)
    query = " ".join(parts)
    if len(query) > MAX_QUERY_CHARS:
        # Keep the end: the newest words matter most.
        query = query[-MAX_QUERY_CHARS:].split(" ", 1)[-1]
    return query
