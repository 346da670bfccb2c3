"""What the UI says about an answer's grounding when the answer itself does not.

A small model may never write [n] citations, and may ignore the instruction to say that the
files did not hold the answer (issue 21: "Sydney" for the capital of Australia, no word that it
was not from the user's files). Left alone, the sources' "cited" marks stay empty with no
reason given, and a made-up answer reads as if it came from the files. The TUI (status line,
sources pane caption) and `brain ask` (sources footer, a note) show these lines instead.
"""

from __future__ import annotations

import re

from assistant.sessions.turn import Turn

NONE_CITED = "the model cited none of these sources"
OWN_KNOWLEDGE = "not found in your files; this answer is the model's own knowledge"

# The answer already says it is not from the user's files (then nothing needs adding).
_DISCLAIMS = re.compile(
    r"\b(?:not|isn't|aren't|wasn't)\s+(?:found\s+|mentioned\s+|covered\s+)?in\s+(?:your|the)"
    r"\s+(?:files?|notes?|documents?|excerpts?|folders?|sources?|material)"
    r"|\b(?:your|the)\s+(?:files?|notes?|documents?|excerpts?|sources?|material)\s+"
    r"(?:do|does|did)(?:\s+not|n't)\s+(?:contain|mention|cover|include|say|have)"
    r"|\b(?:couldn't|could\s+not|didn't|did\s+not|can't|cannot|wasn't\s+able\s+to|"
    r"was\s+not\s+able\s+to|unable\s+to)\s+find"
    r"|\bgeneral\s+knowledge|\bmy\s+own\s+knowledge|\bnot\s+from\s+your"
    r"|\bno\s+(?:relevant\s+)?(?:information|excerpts?|mention|results?)\b"
    r"|\bnone\s+of\s+the\s+(?:excerpts|files|sources|documents)",
    re.IGNORECASE,
)
_CJK_DISCLAIMS = ("没有找到", "未找到", "找不到", "没找到", "未能找到", "文件中没有", "文件里没有",
                  "文件中未", "没有相关", "不在你的", "不在您的", "常识", "一般知识", "通用知识",
                  "并非来自", "不是来自", "没有提到", "未提及", "没有提及")


def disclaims_files(answer: str) -> bool:
    """The answer says it found nothing in the user's files, or answers from general
    knowledge (English or Chinese)."""
    return bool(_DISCLAIMS.search(answer)) or any(p in answer for p in _CJK_DISCLAIMS)


def answer_notes(turn: Turn) -> tuple[str, ...]:
    """The notes to show with a stored answer: NONE_CITED when it had sources and cites none;
    OWN_KNOWLEDGE when the search found nothing that matches and the answer does not say so."""
    if turn.status == "failed" or not turn.answer.strip():
        return ()
    notes: list[str] = []
    if turn.sources and not turn.citations:
        notes.append(NONE_CITED)
    if turn.low_confidence and not turn.citations and not disclaims_files(turn.answer):
        notes.append(OWN_KNOWLEDGE)
    return tuple(notes)
