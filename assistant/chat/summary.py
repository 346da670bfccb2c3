"""Rolling summary: older turns folded into a short summary by the model, in the background.

The last `history_turns` turns stay verbatim in the prompt; older ones (and any the history
budget had to drop) are folded into the session's summary after a reply has finished, so a
reply never waits for it. Folding changes the start of the history, so Ollama re-reads the whole
conversation on the next turn: it happens in batches (`FOLD_BATCH` turns at once), not after
every turn. Before folding, the turns go through long-term memory extraction: a fact the user
mentioned ten turns ago survives in memory even if the summary leaves it out — but a failing
extraction does not hold the fold back (it keeps its own pointer and retries later); the turns
stay verbatim in the database either way, so nothing is lost.

The request is a background one (see background.py): a JSON schema with `think: false`, so a
thinking-only model writes the summary at once instead of reasoning first, input bounded by
`FOLD_TOKENS`, reply capped at `NUM_PREDICT`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from assistant.llm.thinking import strip_reasoning
from assistant.sessions.turn import Turn

SUMMARY_WORDS = 200
FOLD_BATCH = 4  # fold when this many turns are beyond `history_turns`
FOLD_TOKENS = 3000  # at most this much conversation per summary request
NUM_PREDICT = 512  # ~SUMMARY_WORDS words and the JSON around them

SUMMARY_SYSTEM = (
    "You maintain a running summary of a conversation between a user and their assistant. "
    f"Write at most {SUMMARY_WORDS} words of plain prose in the conversation's language. Keep "
    "names, decisions, numbers, files mentioned and open questions; drop greetings and "
    'filler. Reply with JSON: {"summary": "…"}.'
)
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}


def turns_to_fold(
    turns: Sequence[Turn], *, keep: int, dropped: int = 0, batch: int = FOLD_BATCH
) -> list[Turn]:
    """The oldest unsummarised turns to fold now: none until `batch` turns are beyond the
    last `keep` (or the history budget had to drop some), then all but the last `keep`, and at
    least the `dropped` oldest ones. Failed turns are skipped (they have no answer) but folded
    past so the summary pointer can move on."""
    usable = [t for t in turns if t.status != "failed"]
    excess = len(usable) - keep
    if dropped <= 0 and excess < max(batch, 1):
        return []
    count = max(excess, dropped, 0)
    if count <= 0:
        return []
    fold = usable[:count]
    last_seq = fold[-1].seq
    return [t for t in turns if t.seq <= last_seq]


def bounded(turns: Sequence[Turn], counter: Callable[[str], int],
            max_tokens: int = FOLD_TOKENS) -> list[Turn]:
    """The oldest of `turns` that fit in `max_tokens` (at least one): one summary request's
    worth; the rest is folded by the next request."""
    out: list[Turn] = []
    used = 0
    for turn in turns:
        cost = counter(turn.question) + counter(turn.answer)
        if out and used + cost > max_tokens:
            break
        out.append(turn)
        used += cost
    return out


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
    """The summary in a model's reply: the JSON's "summary", else the plain text without
    reasoning (tagged or untagged) and preamble; "" when there is none (e.g. the reply was
    cut off inside its reasoning or its JSON)."""
    text = strip_reasoning(text)
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return ""  # cut-off JSON: nothing usable
        summary = data.get("summary") if isinstance(data, dict) else None
        return " ".join(summary.split()) if isinstance(summary, str) else ""
    text = re.sub(r"(?i)^(here is |here's )?(the )?(updated )?summary:?\s*", "", text).strip()
    return text
