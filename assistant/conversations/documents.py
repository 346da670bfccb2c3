"""What of a turn or a session summary is indexed, as keyword text and as embedding text.

Only what was said is indexed: the question, the answer, the session title. Reasoning a model
put in its answer (`<think>…</think>`, or untagged reasoning closed by a stray `</think>`),
the sources a turn showed and tool payloads are never indexed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from assistant.sessions.store import title_from

UnitKind = Literal["turn", "summary"]

# MiniLM reads at most 256 word pieces (~1,000 characters of English): the head of a long
# answer is embedded, the whole of it goes to the keyword index.
EMBED_CHARS = 1000

_THINK_BLOCK = re.compile(r"(?s)<think>.*?</think>")


def strip_reasoning(text: str) -> str:
    """The answer without the model's reasoning."""
    text = _THINK_BLOCK.sub("", text)
    if "</think>" in text:  # untagged reasoning before a lone closing tag (qwen3, think:false)
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


def turn_unit_id(turn_id: int) -> str:
    return f"t:{turn_id}"


def summary_unit_id(session_id: str) -> str:
    return f"s:{session_id}"


@dataclass(frozen=True, slots=True)
class UnitDoc:
    """One unit to index: its id, session, time and the two texts derived from it."""

    id: str
    kind: UnitKind
    session_id: str
    turn_id: int | None
    created_at: float
    keyword_text: str
    embedding_text: str

    @property
    def text_hash(self) -> str:
        digest = hashlib.sha256(self.keyword_text.encode("utf-8"))
        return digest.hexdigest()[:16]

    @property
    def vector_hash(self) -> str:
        """Of the embedded text: a unit whose keyword text changed (a turn's neighbour was
        added) but whose embedded text did not keeps its vector."""
        digest = hashlib.sha256(self.embedding_text.encode("utf-8"))
        return digest.hexdigest()[:16]


def said_text(question: str, answer: str) -> str:
    """What was said in a turn: the question and the answer without reasoning."""
    return "\n".join(part for part in (question.strip(), strip_reasoning(answer)) if part)


def turn_doc(
    *, turn_id: int, session_id: str, title: str, question: str, answer: str,
    created_at: float, context: Sequence[str] = (),
) -> UnitDoc:
    """A turn's unit. `context` = what was said in the turns just before and after it in its
    session: its words also find this turn (a question's words are often split over adjacent
    turns: "what did Caroline research?" → "I'm looking into adoption" / "which agencies?").
    The turn's own words appear twice in the keyword text so they outweigh the neighbours'.
    Tuned on LoCoMo (the only conversation data we have; bench/conversations.py), recall@5 with
    the final fusion: own words only 0.653, + neighbours 0.710, own words doubled 0.727; two
    neighbours a side 0.711. Only the turn's own words are embedded (the search adds its
    neighbours' meaning from their vectors: `dense_context`)."""
    said = said_text(question, answer)
    # A title that is only this question cut short would count its words twice.
    named = title.strip() if title.strip() != title_from(question) else ""
    keyword = "\n".join(part for part in (named, said, said, *context) if part)
    return UnitDoc(turn_unit_id(turn_id), "turn", session_id, turn_id, created_at, keyword,
                   said[:EMBED_CHARS] or title[:EMBED_CHARS])


def summary_doc(
    *, session_id: str, title: str, summary: str, created_at: float, summary_title: str = ""
) -> UnitDoc:
    """A session's unit: its title, the title the model gave its summary, the summary."""
    named = summary_title.strip() if summary_title.strip() != title.strip() else ""
    text = "\n".join(part for part in (title.strip(), named, summary.strip()) if part)
    return UnitDoc(summary_unit_id(session_id), "summary", session_id, None, created_at, text,
                   text[:EMBED_CHARS])
