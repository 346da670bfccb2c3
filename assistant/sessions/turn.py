"""Domain types of one conversation turn, shared by the engine, sessions, CLI and TUI."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from assistant.timerange import TimeRange

TurnStatus = Literal["complete", "interrupted", "failed"]
# Shown with an answer the model stopped at its length limit (Ollama's done_reason "length").
TRUNCATED_NOTE = "answer cut off at the length limit (chat.max_answer_tokens) — ask to continue"
# What "continue" (F9, `brain ask --retry`) sends after such an answer: the history shows it
# with prompt.TRUNCATED_MARK, and retrieval reads it as a continuation (retrieval/query.py).
CONTINUE_MESSAGE = "continue"
# What a stored turn shows in place of a source whose folder was removed from the index, and of
# a memory that was forgotten (the turn itself is kept; see assistant/erasure).
SOURCE_REMOVED = "source removed"
MEMORY_FORGOTTEN = "memory forgotten"
# ... and of an earlier conversation recalled into a turn, once that conversation was deleted.
CONVERSATION_DELETED = "conversation deleted"


@dataclass(frozen=True, slots=True)
class HitScores:
    """Why the retriever returned a chunk (the evidence the sources pane and `brain ask --json`
    show): its rank and per-retriever scores. Live items only: sessions store text, not this."""

    rank: int  # after fusion (and reranking), 1-based
    vector: float | None  # cosine similarity; None when dense search did not return it
    keyword: float | None  # BM25 normalised to 0..1; None when keyword search did not
    fused: float  # the fused score (RRF plus recency boost)
    recency_boost: float = 0.0  # fraction added for a recently changed file
    more_from_file: int = 0  # the file's other matching chunks not shown


@dataclass(frozen=True, slots=True)
class KnowledgeItem:
    """One retrieved chunk as the chat engine uses it (independent of the retriever's types)."""

    chunk_id: str
    text: str
    source: str  # absolute path
    relpath: str  # path relative to its folder, for display
    heading: str
    score: float
    start_line: int = 0
    end_line: int = 0
    page: int | None = None
    end_page: int | None = None  # a chunk over a page break: cited as "p. 1–2"
    scores: HitScores | None = field(default=None, compare=False, hash=False, repr=False)

    @property
    def location(self) -> str:
        """`notes/git.md:12-30` (or `paper.pdf p. 3`), for source lists."""
        if self.page is not None:
            if self.end_page is not None and self.end_page != self.page:
                return f"{self.relpath} p. {self.page}–{self.end_page}"
            return f"{self.relpath} p. {self.page}"
        if self.start_line:
            return f"{self.relpath}:{self.start_line}-{self.end_line}"
        return self.relpath


class RecalledRecord(Protocol):
    """The stored memory behind a live recall, as far as this floor needs it: `memory/` sits
    above `sessions/`, so its `Memory` (which satisfies this) is not named here. Readers that
    want the whole memory (the TUI's memory row) narrow with `isinstance(…, Memory)`."""

    @property
    def id(self) -> str: ...

    def to_json(self, *, score: float | None = None) -> dict[str, object]: ...


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One recalled long-term memory about the user."""

    memory_id: str
    text: str
    kind: str  # fact, preference, goal, …
    score: float
    # The stored memory it came from (key, pinned, dates for the UI and `brain ask --json`);
    # None once stored in a session, which keeps the text as it was used.
    memory: RecalledRecord | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True, slots=True)
class ConversationItem:
    """One earlier turn (or a whole earlier session, by its summary) recalled from past
    conversations. `data` is its `brain sessions search --json` hit object."""

    unit_id: str  # "t:<turn id>" or "s:<session id>"; "" once the conversation was deleted
    session_id: str
    title: str  # the session's title
    seq: int | None  # the turn's position in its session; None: the session itself
    created_at: float  # Unix seconds
    question: str  # "" for a session
    answer: str  # for a session: its summary
    score: float
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def date(self) -> str:
        """The local date it was said, `2024-03-05`."""
        return time.strftime("%Y-%m-%d", time.localtime(self.created_at))

    @property
    def deleted(self) -> bool:
        return not self.unit_id

    @property
    def turn_id(self) -> int | None:
        return int(self.unit_id[2:]) if self.unit_id.startswith("t:") else None


@dataclass(frozen=True, slots=True)
class Recalled:
    """An earlier conversation as numbered in the prompt: the [c<n>] the model may cite."""

    n: int
    item: ConversationItem
    cited: bool = False

    @property
    def label(self) -> str:
        return f"c{self.n}"


@dataclass(frozen=True, slots=True)
class Recollection:
    """What the conversation source returned for one question: the earlier turns worth
    showing, and the dates the question named (a phrase such as "last week", or the tool's
    since/until), None when it named none."""

    query: str  # the text searched (the time phrase removed)
    items: tuple[ConversationItem, ...]
    time_range: TimeRange | None = None
    applied: bool = True  # False: the question's dates held no conversation; all were searched
    timings: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    warnings: tuple[str, ...] = ()  # e.g. the search failed (the answer goes on without it)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What the knowledge source returned for one question."""

    query: str
    items: tuple[KnowledgeItem, ...]
    low_confidence: bool
    timings: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    log_id: int | None = None  # retrieval-log entry, for 👍/👎 feedback
    empty_index: bool = False  # nothing is indexed yet
    warnings: tuple[str, ...] = ()  # e.g. the vector store lost its vectors (keyword-only)


@dataclass(frozen=True, slots=True)
class Source:
    """A knowledge item as numbered in the prompt: the [n] the model may cite."""

    n: int
    item: KnowledgeItem
    cited: bool = False


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call the model made, with the result shown to the user."""

    name: str
    arguments: dict[str, Any]
    result: str
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Turn:
    """A stored exchange: the user's message and the answer (possibly partial)."""

    id: int
    session_id: str
    seq: int  # 1-based position in the session
    question: str
    answer: str
    status: TurnStatus
    created_at: float
    model: str = ""
    error: str = ""
    low_confidence: bool = False
    sources: tuple[Source, ...] = ()
    memories: tuple[MemoryItem, ...] = ()
    tools: tuple[ToolUse, ...] = ()
    timings: dict[str, float] = field(default_factory=dict, compare=False, hash=False)
    log_id: int | None = None  # the retrieval-log entry of this turn's search
    truncated: bool = False  # the model stopped at its length limit (TRUNCATED_NOTE)
    conversations: tuple[Recalled, ...] = ()  # earlier conversations shown, [c<n>]

    @property
    def citations(self) -> tuple[Source, ...]:
        return tuple(s for s in self.sources if s.cited)

    @property
    def cited_conversations(self) -> tuple[Recalled, ...]:
        return tuple(c for c in self.conversations if c.cited)


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    title: str
    created_at: float
    updated_at: float
    model: str = ""
    summary: str = ""
    summary_through: int = 0  # turns with seq <= this are folded into `summary`
    extracted_through: int = 0  # turns with seq <= this went through memory extraction
    turn_count: int = 0
