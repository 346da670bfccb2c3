"""What a message needs from the user's files, decided by rules (no model call on the hot path).

A question ("how do I extract a tar file", "tar gz extract", "我想知道怎么解压") gets retrieval
as always. A statement about the user ("I moved to Lisbon last month and work at a bakery",
"我上个月搬到了里斯本") or small talk ("thanks!", "hi", "你好") does not: six unrelated excerpts
under a low-confidence note were what a small real model copied out verbatim in reply to a
statement (issue 21). A statement keeps at most the single best excerpt, and only when the
search was confident it matches (a user telling what they work on may be talking about a file).

The default is "question": a keyword query has no question mark and no verb, and must still be
searched. Only clear first-person statements and whole-message small talk are told apart, in
English and Chinese; anything asking, requesting or wondering is a question, whatever its form
("I need to know how to …", "I'm looking for …", "请告诉我 …").
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Literal

from assistant.sessions.turn import Retrieval

MessageKind = Literal["question", "statement", "small_talk"]

# Whole messages that are only social (normalised: lower case, punctuation and emoji removed).
_SMALL_TALK = frozenset({
    "hi", "hello", "hey", "hiya", "yo", "hi there", "hello there", "hey there", "howdy",
    "good morning", "good afternoon", "good evening", "good night", "morning", "evening",
    "thanks", "thank you", "thanks a lot", "thank you so much", "thanks so much", "thx", "ty",
    "many thanks", "cheers", "thanks again", "ok thanks", "ok thank you", "great thanks",
    "ok", "okay", "k", "kk", "cool", "great", "nice", "awesome", "perfect", "got it",
    "sounds good", "makes sense", "i see", "alright", "all right", "sure", "yes", "no", "yep",
    "nope", "lol", "haha", "wow", "bye", "goodbye", "see you", "see you later", "good job",
    "well done", "nice one", "how are you", "how are you doing", "how is it going",
    "hows it going", "how's it going", "whats up", "what's up", "sup", "you there",
    "你好", "您好", "嗨", "哈喽", "早", "早上好", "下午好", "晚上好", "晚安", "谢谢", "谢谢你",
    "多谢", "感谢", "非常感谢", "谢啦", "好的", "好", "好吧", "嗯", "嗯嗯", "哦", "明白了",
    "知道了", "懂了", "收到", "可以", "不错", "很好", "太好了", "哈哈", "哈哈哈", "再见", "拜拜",
    "你好吗", "最近怎么样", "在吗", "辛苦了",
})
# Asking, requesting or wondering, anywhere in the message (English, word-bounded).
_EN_ASKING = re.compile(
    r"\b(?:how\s+(?:to|do|does|did|can|could|should|would|is|are|much|many|long|often)"
    r"|what(?:'s|\s+is|\s+are|\s+was|\s+does|\s+do|\s+did|\s+should|\s+can)"
    r"|why|which|whose|whom|where\s+(?:is|are|do|does|can|did|should)"
    r"|when\s+(?:is|are|do|does|did|should|will|can)"
    r"|who\s+(?:is|are|was|wrote|made|can)"
    r"|is\s+there|are\s+there|any\s+idea|do\s+you\s+know|can\s+you|could\s+you|would\s+you"
    r"|will\s+you|please|explain|show\s+me|tell\s+me|remind\s+me|help\s+me|teach\s+me"
    r"|(?:need|want|like|love|have)\s+to\s+(?:know|learn|find|understand|figure|see)"
    r"|(?:'d|would)\s+like\s+to|wonder(?:ing)?|curious|looking\s+for|searching\s+for"
    r"|trying\s+to|can't\s+figure|cannot\s+figure|can't\s+remember|cannot\s+remember"
    r"|don't\s+(?:know|understand|remember|get)|not\s+sure|no\s+idea|forgot\s+how"
    r"|stuck|confused|need\s+help|struggling|how\s+come)\b",
    re.IGNORECASE,
)
# A message starting with one of these asks or requests ("list the tar options").
_EN_OPENERS = frozenset({
    "what", "how", "why", "when", "where", "who", "which", "is", "are", "am", "was", "were",
    "do", "does", "did", "can", "could", "would", "should", "will", "shall", "may", "might",
    "has", "have", "had", "isn't", "aren't", "doesn't", "don't", "didn't", "can't", "won't",
    "list", "show", "give", "find", "describe", "compare", "summarize", "summarise", "write",
    "translate", "define", "recommend", "suggest", "explain", "tell", "help", "search",
    "look", "get", "make", "create", "convert", "fix", "check", "count", "calculate", "name",
    "say", "continue", "go", "read", "open",
})
# First person as the subject of a sentence: what makes a message a statement about the user.
_EN_FIRST_PERSON = re.compile(
    r"(?:^|[.!;,]\s*|\b(?:and|but|so|now|today|yesterday|recently|also|then)\s+|"
    r"\b(?:last|this|next)\s+\w+\s+)"
    r"(?:i|i'm|im|i've|i'd|i'll|we|we're|we've|my\s+\w+(?:\s+\w+)?\s+"
    r"(?:is|are|was|were|has|have|had|lives?|works?|just|will|got|likes?|loves?))\b",
    re.IGNORECASE,
)
_CJK_ASKING = (
    "什么", "怎么", "怎样", "如何", "为什么", "为何", "哪", "谁", "几", "多少", "是否", "能不能",
    "可不可以", "会不会", "有没有", "是不是", "要不要", "请", "告诉我", "解释", "介绍", "帮我",
    "给我", "列出", "说明", "想知道", "需要知道", "想了解", "不知道", "不懂", "不明白", "不会",
    "求", "查", "找", "搜索", "推荐", "建议", "比较", "总结", "翻译", "继续", "接着",
)
_CJK_QUESTION_ENDINGS = ("吗", "呢", "么", "嘛", "吧")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_PUNCT = re.compile(r"[^\w\s'\u3400-\u9fff\uf900-\ufaff]+")


def _normalise(message: str) -> str:
    return " ".join(_PUNCT.sub(" ", message.lower().replace("’", "'")).split())


def classify(message: str) -> MessageKind:
    """"question" unless the message is only small talk or clearly a statement."""
    text = message.strip()
    norm = _normalise(text)
    if not norm or norm in _SMALL_TALK or norm.replace(" ", "") in _SMALL_TALK:
        return "small_talk"
    if "?" in text or "？" in text:
        return "question"
    if _CJK.search(text):
        bare = text.rstrip("。.!！~～ ")
        if bare.endswith(_CJK_QUESTION_ENDINGS) or any(w in text for w in _CJK_ASKING):
            return "question"
        return "statement" if "我" in text else "question"
    words = norm.split()
    if words[0] in _EN_OPENERS or _EN_ASKING.search(norm):
        return "question"
    return "statement" if _EN_FIRST_PERSON.search(norm) else "question"


def material_for(kind: MessageKind, retrieval: Retrieval) -> Retrieval:
    """The retrieval a message of `kind` is given: a question all of it; a statement the best
    excerpt alone when the search was confident, else none; small talk none. Neither of the
    latter gets the low-confidence note (it tells the model to say the files lack an answer
    to a message that asked nothing)."""
    if kind == "question":
        return retrieval
    items = retrieval.items
    keep = ((max(items, key=lambda item: item.score),)
            if items and kind == "statement" and not retrieval.low_confidence else ())
    return replace(retrieval, items=keep, low_confidence=False)
