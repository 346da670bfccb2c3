"""The rule-based backstop of extraction: a clear statement the user made about themselves,
stored in their own words when the model found nothing in it.

A small real model often answers `{"memories": []}` to "I moved to Berlin in April and I teach
maths at a school" (SmolLM2-135M did for 4 of the 16 statements it was measured on), so the
one thing a user expects a memory to learn is lost. When the model returns no memory for a
turn that `assistant/message_kind.py` calls a statement, each clause whose subject is the
user ("I …", "I'm …", "My name is …", "我…") is restated by `restate.in_third_person` ("The user
moved to Berlin in April.") and typed by `restate.classify`. Nothing is invented: the words are
the user's, only the person changes.

Conservative on purpose — a wrong memory costs more than a missed one (the model still gets
its chance first): only the user as the subject (not "my sister is a nurse", another person's
fact), no passing moods or opinions ("I'm tired", "I think so"), no remarks about the
conversation ("I tried that and it failed": it/that/this/you point back at it), no future or
conditional ("I'll try", "I'd rather not"). What it proposes then goes through the same
validation as a model's memory (secret filter, chatter filter, grounding) and the same dedup.
"""

from __future__ import annotations

import re

from assistant.memory.model import MemoryType
from assistant.memory.restate import classify, in_third_person
from assistant.message_kind import classify as message_kind

# Recorded in the memory's history (`brain memory history`): the rule, not the model, wrote it.
RULE_VIA = "the statement rule, not the model"
RULE_CONFIDENCE = 0.6  # above extraction's MIN_CONFIDENCE: the user said it in so many words
MAX_CLAUSES = 3  # per turn
MAX_WORDS = 30  # a longer clause is a story, not a memory
MAX_CJK_CHARS = 60

_SENTENCES = re.compile(r"(?<=[.!;。！；])\s*")
# A new clause with the user as its subject: "…, and I work at …", "… but I'm …".
_CLAUSE = re.compile(r"(?:,\s*|\s+)(?:and|but|so)\s+(?=(?:I|I['’](?:m|ve))\b)|,\s+(?=I\b)")
_EN_SUBJECT = re.compile(r"^(?:I\b(?!['’](?:ll|d)\b)|I['’](?:m|ve)\b|my name is\b)",
                         re.IGNORECASE)
# Opinions, moods and talk about the conversation: not lasting facts about the user.
_EN_NOT_LASTING = re.compile(
    r"^I(?:['’]m| am| was)\s+(?:just\s+|so\s+|very\s+|really\s+|a bit\s+)?"
    r"(?:tired|hungry|thirsty|sleepy|bored|busy|back|here|done|ready|sure|sorry|fine|ok|okay|"
    r"good|great|happy|sad|glad|confused|lost|stuck|annoyed|excited|curious|kidding|joking|"
    r"not sure|going to|gonna|about to|trying)\b"
    r"|^I\s+(?:(?:just|really|also|don't|do not)\s+)?(?:think|guess|suppose|believe|mean|agree|"
    r"disagree|see|hope|feel|felt|wish|wonder|bet|tried|try|will|would|shall|should|could|might|"
    r"may|can|can't|cannot|need|want|got it|understand|know|forgot|remember)\b",
    re.IGNORECASE,
)
# Words pointing back at the conversation or at someone named in another clause ("… and I
# visit her every August": alone, "her" says nothing).
_EN_POINTS_BACK = re.compile(r"\b(?:it|that|this|these|those|you|your|yours|here|he|she|him|"
                             r"her|his|hers|they|them|their|theirs)\b", re.IGNORECASE)
_ZH_SUBJECT = re.compile(r"^我(?![们的])")
_ZH_NOT_LASTING = re.compile(
    r"^我(?:觉得|认为|想|希望|猜|同意|明白|懂|知道|试|会|要|能|可以|需要|刚才|现在)"
    r"|^我(?:很|有点|太|好)?(?:累|饿|渴|困|忙|无聊|开心|难过)"
    r"|这|那|它|你")


def _clauses(turn: str) -> list[str]:
    out: list[str] = []
    for sentence in _SENTENCES.split(turn.strip()):
        out.extend(part.strip() for part in _CLAUSE.split(sentence) if part.strip())
    return out


def _lasting_self_fact(clause: str) -> bool:
    """Whether `clause` states something lasting with the user as its subject."""
    if re.search(r"[\u3400-\u9fff]", clause):
        return (_ZH_SUBJECT.match(clause) is not None and not _ZH_NOT_LASTING.search(clause)
                and len(clause) <= MAX_CJK_CHARS)
    return (_EN_SUBJECT.match(clause) is not None and not _EN_NOT_LASTING.match(clause)
            and not _EN_POINTS_BACK.search(clause) and len(clause.split()) <= MAX_WORDS)


def _sentence(text: str) -> str:
    text = text.rstrip(" ,;；，")
    if re.search(r"[\u3400-\u9fff]$", text):
        return text + "。"
    return text if text.endswith((".", "!", "。", "！")) else text + "."


def self_statements(turn: str) -> list[tuple[str, MemoryType]]:
    """The memories the rule makes of `turn`: each clause of a clear self-statement with the
    user as its subject, restated ("The user …", "用户…") and typed; [] for anything else
    (questions, small talk, requests, other people's facts, moods)."""
    if message_kind(turn) != "statement":
        return []
    found: list[tuple[str, MemoryType]] = []
    for clause in _clauses(turn):
        if not _lasting_self_fact(clause):
            continue
        restated = _sentence(in_third_person(clause))
        if restated.rstrip(".。") == clause.rstrip(".。"):
            continue  # not first person after all
        found.append((restated, classify(restated)))
    return found[:MAX_CLAUSES]
