"""What is not worth remembering: greetings, questions and transient chatter."""

from __future__ import annotations

import re

from assistant.memory.model import MemoryType

_GREETING = re.compile(
    r"(?ix)^\s*(?:hi|hello|hey|yo|hiya|good\s+(?:morning|afternoon|evening|night)|"
    r"thanks?(?:\s+you)?|thank\s+you(?:\s+so\s+much)?|thx|ty|ok(?:ay)?|sure|cool|great|nice|"
    r"bye|goodbye|see\s+you|cheers|lol|haha|yes|no|yep|nope|got\s+it|sounds\s+good|"
    r"你好|您好|嗨|谢谢|多谢|好的|再见|拜拜|嗯|哈哈)"
    r"[\s,.!~…。！，]*(?:there|all|everyone|again|a\s+lot|much|mate)?[\s,.!~…。！，]*$"
)
_QUESTION_START = re.compile(
    r"(?i)^\s*(?:what|why|how|when|where|who|whom|which|can|could|would|should|is|are|do|does|"
    r"did|will|may|might|shall)\b"
)
_TRANSIENT = re.compile(
    r"(?i)\b(?:right now|at the moment|brb|be right back|just kidding|this morning|tonight|"
    r"for now|in a minute|one sec)\b|现在有点|马上回来|稍等"
)


def chatter_reason(text: str, memory_type: MemoryType = MemoryType.FACT) -> str | None:
    """Why `text` should not become a memory, or None if it may."""
    stripped = text.strip()
    if not stripped:
        return "empty"
    if _GREETING.match(stripped):
        return "greeting or acknowledgement"
    if stripped.endswith(("?", "？")) or (_QUESTION_START.match(stripped) and "?" in stripped):
        return "question"
    words = re.findall(r"\w+", stripped)
    has_cjk = any("\u4e00" <= ch <= "\u9fff" for ch in stripped)
    if (not has_cjk and len(words) < 3) or (has_cjk and len(stripped) < 4):
        return "too short to be a memory"
    if memory_type is not MemoryType.EPISODE and _TRANSIENT.search(stripped):
        return "transient"
    return None
