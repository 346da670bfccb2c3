"""Domain types of the memory layer (frozen: the UI and chat get values, never live rows)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from assistant.memory.clock import iso_of


class MemoryType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    EPISODE = "episode"
    PROCEDURE = "procedure"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"  # replaced by a newer statement with the same key
    DELETED = "deleted"  # removed by the user; kept for undo until forget-all
    ARCHIVED = "archived"  # pushed out by the capacity limit; restorable


class Actor(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    # An outside AI agent through `brain mcp` (writes the user allowed with mcp.allow_writes);
    # which one is the history's `via` ("mcp:Claude Code 1.2").
    AGENT = "agent"


class Event(StrEnum):
    ADD = "add"
    UPDATE = "update"
    SUPERSEDE = "supersede"
    DELETE = "delete"
    RESTORE = "restore"
    EDIT_BY_USER = "edit-by-user"
    PIN = "pin"
    UNPIN = "unpin"
    ARCHIVE = "archive"
    DECAY = "decay"


def parse_type(value: str) -> MemoryType:
    try:
        return MemoryType(value.strip().lower())
    except ValueError:
        raise ValueError(
            f"unknown memory type {value!r} (one of: {', '.join(t.value for t in MemoryType)})"
        ) from None


@dataclass(frozen=True, slots=True)
class Memory:
    id: str
    type: MemoryType
    key: str | None
    text: str
    confidence: float
    importance: float
    status: MemoryStatus
    pinned: bool
    created_at: float  # Unix seconds, as stored
    updated_at: float
    last_used_at: float | None
    use_count: int
    source: str | None = None  # provenance: turn id, file line, "cli"…
    session_id: str | None = None
    source_text: str | None = None  # the user's own words the memory came from
    superseded_by: str | None = None
    version: int = 1  # bumped on every change; writers re-check it (optimistic concurrency)
    edited_by_user: bool = False

    def to_json(self, *, score: float | None = None) -> dict[str, object]:
        """The `memory list/search --json` contract."""
        out: dict[str, object] = {
            "id": self.id,
            "type": self.type.value,
            "key": self.key,
            "text": self.text,
        }
        if score is not None:
            out["score"] = round(float(score), 6)
        out |= {
            "created_at": iso_of(self.created_at),
            "updated_at": iso_of(self.updated_at),
            "status": self.status.value,
            "source": self.source,
            "pinned": self.pinned,
            "importance": round(self.importance, 4),
            "confidence": round(self.confidence, 4),
        }
        return out


@dataclass(frozen=True, slots=True)
class NewMemory:
    """A memory to be stored; the store assigns id, status and timestamps."""

    text: str
    type: MemoryType = MemoryType.FACT
    key: str | None = None
    confidence: float = 1.0
    importance: float = 0.5
    created_at: float | None = None  # Unix seconds; default: now
    source: str | None = None
    session_id: str | None = None
    source_text: str | None = None
    pinned: bool = False
    # Extra text used only for search (neighbouring turns, dates); never shown or exported.
    context: str = ""
    # The user's own messages of the conversation a memory proposed by the assistant (tool
    # call, extraction) must be grounded in; checked by the store, never stored.
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    seq: int
    memory_id: str
    event: Event
    old_text: str | None
    new_text: str | None
    actor: Actor
    at: float  # Unix seconds
    undone: bool = False
    via: str | None = None  # for an agent's change: which client made it


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    memory: Memory
    score: float
    similarity: float
    reason: str  # "relevant", "pinned" or "profile"
    # The evidence behind `similarity` (search results only): the cosine to the question, None
    # when the vectors could not be read, and BM25 relative to the best keyword candidate.
    cosine: float | None = None
    keyword: float = 0.0


@dataclass(frozen=True, slots=True)
class Profile:
    text: str
    updated_at: float | None  # Unix seconds
    edited_by_user: bool
    pending_text: str | None  # a model rewrite waiting for the user to accept (they had edited)
