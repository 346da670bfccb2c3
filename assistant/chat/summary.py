"""Rolling summary: older turns folded into a short summary by the model, in the background.

The last `history_turns` turns stay verbatim in the prompt; older ones (and any the history
budget had to drop) are folded into the session's summary after a reply has finished, so a
reply never waits for it. Before folding, the turns go through long-term memory extraction: a
fact the user mentioned ten turns ago survives in memory even if the summary leaves it out. If
extraction fails, the fold is skipped (and retried after the next turn): the turns stay verbatim
in the database either way, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from assistant.chat.turn import Turn

SUMMARY_WORDS = 200

SUMMARY_SYSTEM = (
    "You maintain a running summary of a conversation between a user and their assistant. "
    f"Write at most {SUMMARY_WORDS} words of plain prose in the conversation's language. Keep "
    "names, decisions, numbers, files mentioned and open questions; drop greetings and "
    "filler. Output only the summary."
)


def turns_to_fold(
    turns: Sequence[Turn], *, keep: int, dropped: int = 0
) -> list[Turn]:
    """The oldest unsummarised turns to fold now: all but the last `keep`, and at least the
    `dropped` oldest ones the history budget could not fit. Failed turns are skipped (they have
    no answer) but folded past so the summary pointer can move on."""
    usable = [t for t in turns if t.status != "failed"]
    count = max(len(usable) - keep, dropped, 0)
    if count <= 0:
        return []
    fold = usable[:count]
    last_seq = fold[-1].seq
    return [t for t in turns if t.seq <= last_seq]


def summary_request(previous: str, turns: Sequence[Turn]) -> str:
    """The user message asking the model for the updated summary."""
    lines = []
    if previous.strip():
        lines += ["Summary so far:", previous.strip(), ""]
    lines.append("New turns to add to the summary:")
    for turn in turns:
        if turn.status == "failed":
            continue
        lines.append(f"User: {turn.question.strip()}")
        answer = turn.answer.strip() + (" [interrupted]" if turn.status == "interrupted" else "")
        lines.append(f"Assistant: {answer}")
    lines += ["", "Write the updated summary."]
    return "\n".join(lines)


def clean_summary(text: str) -> str:
    """Strip a model's preamble/thinking so only the summary is stored."""
    import re

    text = re.sub(r"(?s)<think>.*?</think>", "", text).strip()
    text = re.sub(r"(?i)^(here is |here's )?(the )?(updated )?summary:?\s*", "", text).strip()
    return text
