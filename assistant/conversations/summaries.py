"""Session summaries: a short model-written account of a session, indexed as a unit of its own.

The chat engine writes them in idle time (engine.py: when a session goes idle or is closed) as
a background request with the chat's own rules (`think: false`, a JSON-schema `format`, the
session's model and `num_ctx` — a different value makes Ollama reload the model:
server/sched.go `needsReload` — and `num_predict` capped). This module says what is asked:
`summary_messages(title, turns)` (an input bounded in characters, so the request fits however
long the session is), `parse_summary(content)` reads the reply and copes with what real models
put in `content` even with `think: false` (qwen3's untagged reasoning ending in `</think>`, a
`<think>` block, code fences, prose around the JSON), `save_summary(store, …)` stores it (the
conversation index then indexes it), `sessions_behind(store, …)` lists the sessions whose
summary is missing or older than their last turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assistant.conversations.documents import strip_reasoning

if TYPE_CHECKING:
    from assistant.sessions.store import SessionStore

SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
    },
    "required": ["title", "summary"],
}

SYSTEM_PROMPT = """\
You write the record of a past chat between a user and their assistant, for finding it later.
Reply with JSON only: {"title": "…", "summary": "…"}.
- title: at most 8 words naming the main topic.
- summary: 2 to 4 sentences: what the user asked or worked on, what was decided or concluded,
  and facts, commands or names worth finding again. Write in the language of the chat.
Do not invent anything that is not in the chat."""

MAX_INPUT_CHARS = 6000  # ~1,500 tokens of chat: fits any num_ctx the chat runs with
TURN_CHARS = 800  # per question or answer
NUM_PREDICT = 256
MAX_TITLE_CHARS = 80
MAX_SUMMARY_CHARS = 1200


class InvalidSummary(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SessionSummary:
    title: str
    text: str


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def transcript(turns: Sequence[tuple[str, str]], *, max_chars: int = MAX_INPUT_CHARS) -> str:
    """The chat as `User:`/`Assistant:` lines within `max_chars`: the first turn (what the
    session was about) and then as many of the latest turns as fit, in order."""
    blocks = [
        "\n".join(part for part in (
            f"User: {_clip(q, TURN_CHARS)}" if q.strip() else "",
            f"Assistant: {_clip(strip_reasoning(a), TURN_CHARS)}" if a.strip() else "",
        ) if part)
        for q, a in turns
    ]
    blocks = [b for b in blocks if b]
    if not blocks:
        return ""
    chosen: list[int] = [0]
    used = len(blocks[0])
    for i in range(len(blocks) - 1, 0, -1):
        if used + len(blocks[i]) + 2 > max_chars:
            break
        chosen.append(i)
        used += len(blocks[i]) + 2
    ordered = sorted(chosen)
    parts: list[str] = []
    for n, i in enumerate(ordered):
        if n and i != ordered[n - 1] + 1:
            parts.append("[…]")
        parts.append(blocks[i])
    return "\n\n".join(parts)[:max_chars]


def summary_messages(
    title: str, turns: Sequence[tuple[str, str]], *, max_chars: int = MAX_INPUT_CHARS
) -> list[dict[str, str]]:
    """The chat messages asking for a summary of `turns` ((question, answer) pairs)."""
    chat = transcript(turns, max_chars=max_chars)
    heading = f"Chat titled {title!r}:\n\n" if title.strip() else "Chat:\n\n"
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": heading + chat},
    ]


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def parse_summary(content: str) -> SessionSummary:
    """The summary in a model reply; raises InvalidSummary when there is none."""
    text = strip_reasoning(content or "").strip()
    text = _FENCE.sub("", text).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise InvalidSummary("no JSON object in the reply")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        raise InvalidSummary(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidSummary("the reply is not a JSON object")
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidSummary('no "summary" text in the reply')
    title = data.get("title")
    return SessionSummary(
        title=_clip(title, MAX_TITLE_CHARS) if isinstance(title, str) else "",
        text=_clip(summary, MAX_SUMMARY_CHARS),
    )


def save_summary(
    store: SessionStore, session_id: str, summary: SessionSummary, *, through_seq: int,
    model: str = "",
) -> bool:
    """Store the summary of turns up to `through_seq` (never replaced by an older one);
    returns whether it was stored."""
    with store.transaction() as conn:
        cur = conn.execute(
            "INSERT INTO session_summaries (session_id, text, title, through_seq, model, "
            "created_at) SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS "
            "(SELECT 1 FROM sessions WHERE id = ?) "
            "ON CONFLICT(session_id) DO UPDATE SET text = excluded.text, "
            "title = excluded.title, through_seq = excluded.through_seq, "
            "model = excluded.model, created_at = excluded.created_at "
            "WHERE through_seq <= excluded.through_seq",
            (session_id, summary.text, summary.title, through_seq, model, store.clock(),
             session_id),
        )
        return cur.rowcount > 0


def summary_of(store: SessionStore, session_id: str) -> tuple[str, int] | None:
    """(text, through_seq) of the stored summary, or None."""
    with store.lock:
        row = store.conn.execute(
            "SELECT text, through_seq FROM session_summaries WHERE session_id = ?",
            (session_id,)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def sessions_behind(
    store: SessionStore,
    *,
    min_turns: int,
    since: float,
    exclude: str | None = None,
    limit: int = 20,
) -> list[tuple[str, int]]:
    """(session id, last turn seq) of the sessions written in chat (not imported) and active
    since `since` whose summary is missing or older than their last turn (failed turns do
    not count), with at least `min_turns` turns; the latest first."""
    with store.lock:
        rows = store.conn.execute(
            "SELECT s.id, MAX(t.seq) AS last_seq FROM sessions s "
            "JOIN turns t ON t.session_id = s.id AND t.status != 'failed' "
            "LEFT JOIN session_summaries ss ON ss.session_id = s.id "
            "WHERE s.model != 'import' AND s.updated_at >= ? AND s.id IS NOT ? "
            "GROUP BY s.id HAVING COUNT(t.id) >= ? AND MAX(t.seq) > "
            "COALESCE(MAX(ss.through_seq), 0) "
            "ORDER BY s.updated_at DESC LIMIT ?",
            (since, exclude, min_turns, limit),
        ).fetchall()
    return [(str(r[0]), int(r[1])) for r in rows]
