"""Domain types of the agent event log (frozen values, never live rows)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from assistant.errors import UserError

# Bounds every writer shares (the MCP tool, the CLI, the summariser): a client cannot fill the
# disk or the prompt of a later reader with one event.
MAX_TEXT_CHARS = 20_000
MAX_LABEL_CHARS = 200  # session and agent names


class EventType(StrEnum):
    ACTION = "action"
    OBSERVATION = "observation"
    DECISION = "decision"
    GOAL = "goal"
    ERROR = "error"
    NOTE = "note"
    SUMMARY = "summary"  # written by the summariser only, linked to the events it covers


# What an agent may log itself; summaries come from the summariser.
LOGGABLE = tuple(t for t in EventType if t is not EventType.SUMMARY)


class EventError(UserError):
    """Bad input for the event log (unknown type, empty text, unknown id…): one line."""


def parse_type(value: str, *, allowed: tuple[EventType, ...] = tuple(EventType)) -> EventType:
    try:
        found = EventType(value.strip().lower())
    except ValueError:
        found = None
    if found is None or found not in allowed:
        raise EventError(
            f"unknown event type {value!r} (one of: {', '.join(t.value for t in allowed)})")
    return found


@dataclass(frozen=True, slots=True)
class NewEvent:
    type: EventType
    text: str
    importance: float = 0.5
    agent: str = "cli"  # who logged it: the MCP client's name from its initialize handshake
    session: str | None = None
    parent: str | None = None  # the id of the event this one follows from
    ts: float | None = None  # Unix seconds; default: now
    covers: tuple[str, ...] = ()  # a summary's events


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    type: EventType
    text: str
    importance: float
    agent: str
    session: str | None
    parent: str | None
    ts: float
    embedded: bool  # its vector is stored (search by meaning finds it)
    summary_of: tuple[str, ...] = ()  # for a summary: the events it covers

    def to_json(self, *, score: float | None = None) -> dict[str, object]:
        """The `brain events --json` and MCP `query_events` shape of one event."""
        import time

        out: dict[str, object] = {
            "id": self.id, "type": self.type.value, "text": self.text,
            "importance": round(self.importance, 4), "agent": self.agent,
            "session": self.session, "parent": self.parent,
            "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.ts)),
        }
        if self.summary_of:
            out["summary_of"] = list(self.summary_of)
        if score is not None:
            out["score"] = round(float(score), 6)
        return out


@dataclass(frozen=True, slots=True)
class EventHit:
    event: Event
    score: float  # the blended score (see search.py)
    relevance: float  # 0-1: meaning and words; 0 when there was no query
    cosine: float | None
    keyword: float | None  # BM25 normalised by the best keyword hit
