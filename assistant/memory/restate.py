"""A statement the user made about themselves, in the form every memory is stored in.

Memories are read back to the chat model under "Memory about the user", so "I prefer short
answers." there reads as if the assistant said it. Extraction asks the model for "The user …"
sentences; what the user asks to remember in so many words ("remember that I prefer short
answers", "记住我是素食者") is rewritten here by rules into the same form — "The user prefers
short answers.", "用户是素食者。" — and given the type extraction would give it. A model that
answers in the first person despite the prompt is rewritten the same way, so every path stores
one form.

Rules, not a model: the rewrite runs on the chat's hot path (an explicit memory is stored before
the reply) and must never invent words. It only changes the person: a statement that is not in
the first person ("the meeting is on Friday") is kept as said.
"""

from __future__ import annotations

import re

from assistant.memory.model import MemoryType

# Forms of a verb after "I" that stay as they are after "The user".
_MODALS = frozenset({
    "can", "could", "will", "would", "shall", "should", "must", "might", "may", "did", "was",
    "had", "can't", "couldn't", "won't", "wouldn't", "shouldn't", "didn't", "wasn't", "hadn't",
})
# Words that may come between the subject and its verb ("I always run …").
_ADVERBS = frozenset({
    "always", "usually", "often", "sometimes", "never", "rarely", "really", "also", "just",
    "only", "still", "mostly", "generally", "normally", "actually",
})
_IRREGULAR = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes",
              "don't": "doesn't", "haven't": "hasn't", "aren't": "isn't", "'m": "is",
              "'ve": "has", "'d": "would", "'ll": "will"}
# Common irregular past forms: unchanged after "The user" (regular ones end in -ed).
_PAST = frozenset({
    "went", "got", "had", "made", "took", "bought", "left", "met", "began", "became", "grew",
    "came", "saw", "sold", "spent", "built", "wrote", "read", "ran", "won", "lost", "found",
    "gave", "kept", "taught", "thought", "brought", "felt", "heard", "knew",
})

_SUBJECT = re.compile(r"^(?P<lead>\W*)(?:I(?P<contraction>['’](?:m|ve|d|ll))|I\b)\s*",
                      re.IGNORECASE)
_WORD = re.compile(r"^(?P<word>[A-Za-z]+(?:['’][a-z]+)?)(?P<rest>.*)$", re.DOTALL)
_MY = re.compile(r"^(?P<lead>\W*)my\b\s*", re.IGNORECASE)
_CJK_SELF = re.compile(r"我(?!们)")
_LATER_SELF = (
    (re.compile(r"\bI['’]m\b"), "they're"), (re.compile(r"\bI am\b"), "they are"),
    (re.compile(r"\bI was\b"), "they were"), (re.compile(r"\bI['’]ve\b"), "they've"),
    (re.compile(r"\bI['’]d\b"), "they'd"), (re.compile(r"\bI['’]ll\b"), "they'll"),
    (re.compile(r"\bI\b"), "they"), (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"), (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b", re.I), "them"),
)


def _third_person(verb: str) -> str:
    lower = verb.lower().replace("’", "'")
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower in _MODALS or lower in _PAST or lower.endswith("ed") or lower.endswith("n't"):
        return lower
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def _rest_in_third_person(text: str) -> str:
    for pattern, replacement in _LATER_SELF:
        text = pattern.sub(replacement, text)
    return text


def _english(text: str) -> str | None:
    match = _MY.match(text)
    if match:
        return f"{match.group('lead')}The user's {_rest_in_third_person(text[match.end():])}"
    match = _SUBJECT.match(text)
    if match is None:
        return None
    rest = text[match.end():]
    contraction = match.group("contraction")
    if contraction:
        verb = _IRREGULAR["'" + contraction[1:].lower()]
        return f"{match.group('lead')}The user {verb} {_rest_in_third_person(rest)}".rstrip()
    if _WORD.match(rest) is None:
        return None  # "I:0", "I." — no verb follows, so nothing reads as a first-person claim
    words: list[str] = []
    while True:
        found = _WORD.match(rest)
        if found is None:
            return f"{match.group('lead')}The user {' '.join(words)}{rest}".rstrip()
        word, rest = found.group("word"), found.group("rest").lstrip()
        if word.lower() in _ADVERBS:
            words.append(word.lower())
            continue
        words.append(_third_person(word))
        return (f"{match.group('lead')}The user {' '.join(words)} "
                f"{_rest_in_third_person(rest)}").rstrip()


def in_third_person(text: str) -> str:
    """`text` with the user as "The user" (English) or "用户" (Chinese) instead of I/my/我;
    text not in the first person comes back unchanged."""
    stripped = text.strip()
    if not stripped:
        return text
    if _CJK_SELF.match(stripped):
        return _CJK_SELF.sub("用户", stripped)
    english = _english(stripped)
    if english is None:
        return stripped
    return english


_PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|likes?|loves?|hates?|dislikes?|enjoys?|favou?rite|rather|"
    r"can't stand|wants? (?:the )?(?:answers?|replies|responses))\b|"
    r"喜欢|讨厌|偏好|偏爱|最爱|希望你",
    re.IGNORECASE,
)
_PROCEDURE = re.compile(
    r"\b(?:always|usually|every (?:day|morning|evening|night|week|month)|each (?:day|morning)|"
    r"routine|habit|before (?:I|they|the user) )\b|总是|每天|每次|每周|习惯|通常",
    re.IGNORECASE,
)
_EPISODE = re.compile(
    r"\b(?:yesterday|last (?:week|month|year|night|summer|winter|spring|autumn|fall)|"
    r"\d+ (?:days?|weeks?|months?|years?) ago|in (?:19|20)\d\d)\b|昨天|前天|上个?月|上周|去年|"
    r"\d+年前",
    re.IGNORECASE,
)


def classify(text: str) -> MemoryType:
    """The type extraction would give a statement: likes and wishes are preferences, habits
    procedures, dated events episodes, anything else a fact."""
    if _PREFERENCE.search(text):
        return MemoryType.PREFERENCE
    if _PROCEDURE.search(text):
        return MemoryType.PROCEDURE
    if _EPISODE.search(text):
        return MemoryType.EPISODE
    return MemoryType.FACT
