"""A session as a Markdown document: each exchange, with its cited sources and earlier
conversations as footnote-style lists, so the export reads on its own (GitHub, Obsidian, a
printout)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from assistant.sessions.turn import Recalled, Session, Source, Turn


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def source_line(source: Source) -> str:
    item = source.item
    heading = f" — {item.heading}" if item.heading else ""
    return f"[{source.n}] `{item.location}`{heading}  \n    {item.source}"


def conversation_line(recalled: Recalled) -> str:
    """`[c1] 2024-03-05 — "Kayak trip", turn 3 of session `a1b2c3d4``, and what was said."""
    item = recalled.item
    if item.deleted:
        return f"[{recalled.label}] {item.date} — *{item.title}*"
    where = (f"session `{item.session_id}`" if item.seq is None
             else f"turn {item.seq} of session `{item.session_id}`")
    head = f"[{recalled.label}] {item.date} — \"{item.title or 'Untitled'}\", {where}"
    said = item.answer if item.seq is None else item.question
    return f"{head}  \n    {_first_line(said, 120)}" if said.strip() else head


def session_markdown(session: Session, turns: Sequence[Turn], *, all_sources: bool = False) -> str:
    """Markdown for `session`. Sources and earlier conversations listed per answer: those
    cited (all with `all_sources`)."""
    title = session.title or "Untitled session"
    out = [
        f"# {title}",
        "",
        f"- Session: `{session.id}`",
        f"- Started: {_when(session.created_at)}; last active: {_when(session.updated_at)}",
    ]
    if session.model:
        out.append(f"- Model: `{session.model}`")
    if session.summary:
        out += ["", "## Summary of earlier turns", "", session.summary.strip()]
    for turn in turns:
        out += ["", f"## {turn.seq}. {_first_line(turn.question)}", ""]
        out += [f"**You** ({_when(turn.created_at)}):", "", _quote(turn.question), ""]
        label = "**Assistant**" + (f" (`{turn.model}`)" if turn.model else "") + ":"
        out += [label, ""]
        if turn.answer:
            out.append(turn.answer.strip())
        if turn.status == "interrupted":
            out += ["", "*(answer interrupted)*"]
        elif turn.status == "failed":
            out += ["", f"*(no answer: {turn.error or 'the request failed'})*"]
        if turn.truncated:
            out += ["", "*(answer cut off at the model's length limit)*"]
        if turn.low_confidence:
            out += ["", "*(the search found nothing that clearly matched this question)*"]
        for tool in turn.tools:
            args = ", ".join(f"{k}={v!r}" for k, v in tool.arguments.items())
            out += ["", f"> tool `{tool.name}({args})`: {_first_line(tool.result)}"]
        listed = turn.sources if all_sources else turn.citations
        if listed:
            out += ["", "Sources:", ""]
            out += [source_line(s) for s in listed]
        recalled = turn.conversations if all_sources else turn.cited_conversations
        if recalled:
            out += ["", "Earlier conversations:", ""]
            out += [conversation_line(c) for c in recalled]
    return "\n".join(out).rstrip() + "\n"


def _first_line(text: str, limit: int = 80) -> str:
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.strip().splitlines())
