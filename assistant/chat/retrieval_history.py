"""What the earlier turns tell the retriever about a follow-up (retrieval/query.py decides
whether the message is one): the user's last questions, and — for the last of them — the
heading of the source its answer cited first, the topic in the files' own words. No model
call: "And how do I list its contents without extracting it?" after a tar question is searched
with the tar question and "tar" (issue 21: alone it ranked od.md first and tar.md 4th).
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.sessions.turn import Turn


def topic_heading(turn: Turn) -> str:
    """The heading of the first source `turn`'s answer cited ("" when it cited none)."""
    cited = turn.citations
    return cited[0].item.heading.strip() if cited else ""


def retrieval_history(turns: Sequence[Turn], count: int) -> list[str]:
    """The last `count` user messages of `turns` (oldest first), the last one with its
    answer's topic heading appended."""
    recent = list(turns)[-count:] if count > 0 else []
    history = [t.question for t in recent]
    if recent:
        heading = topic_heading(recent[-1])
        if heading and heading.lower() not in history[-1].lower():
            history[-1] = f"{history[-1]} {heading}"
    return history
