"""What the widgets display: small frozen dataclasses the backend adapter builds from core types.

Widgets depend only on these, so a change in a core type touches `tui/backend.py` alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SourceView:
    """One retrieved chunk with the evidence for why it was retrieved."""

    number: int  # the [n] the answer cites, from 1
    chunk_id: str
    source: str  # absolute path
    relpath: str
    heading: str
    text: str
    start_line: int
    end_line: int
    vector: float | None  # cosine similarity, shown as a percentage
    keyword: float | None  # BM25 normalised to 0..1
    fused_rank: int
    recent: bool  # got a recency boost
    cited: bool = False
    more_from_file: int = 0  # the file's other matching chunks not listed ("+2 more …")
    page: str = ""  # where in a PDF: "p. 3", "p. 1–2"; "" for a text file


@dataclass(frozen=True, slots=True)
class ConversationView:
    """An earlier conversation recalled for an answer ([c1]) or found by a search: one turn of
    a past session (or the whole session, by its summary)."""

    number: int  # the n of [c<n>], or the rank in a search, from 1
    session_id: str  # "" once that session was deleted
    title: str
    date: str  # local date and time, for display
    question: str  # "" for a whole session
    answer: str  # for a whole session: its summary
    seq: int | None = None  # the turn's position in its session; None: the session itself
    cited: bool = False
    score: float | None = None

    @property
    def deleted(self) -> bool:
        return not self.session_id


@dataclass(frozen=True, slots=True)
class ConversationSearch:
    """What a search over all conversations found, and the dates it searched."""

    query: str
    hits: tuple[ConversationView, ...] = ()
    time_range: str = ""  # "2026-03-09 → 2026-03-15 (last week)", or "" for all dates
    # What was found, as `brain sessions search` says it (assistant/conversations/finding.py):
    # "2 conversations about 'kayak'", "nothing about 'kyoto' in that period · dates: …".
    caption: str = ""


@dataclass(frozen=True, slots=True)
class MemoryView:
    id: str
    type: str  # fact, preference, episode, procedure
    text: str
    key: str | None = None
    pinned: bool = False
    status: str = "active"
    updated_at: str = ""  # ISO-8601, for display
    version: int = 0  # grows with every change: undo takes back exactly the change that made it


@dataclass(frozen=True, slots=True)
class MemoryChanges:
    """What the memory poll found since its last look (any process may have changed the store)."""

    version: int  # moves on every change; the poll compares it, nothing else
    count: int  # active memories now, for the status line
    stamp: float  # the newest change seen (updated_at, Unix seconds): where the next look starts
    learned: tuple[MemoryView, ...] = ()  # what the assistant added or changed since the stamp


@dataclass(frozen=True, slots=True)
class MemoryEvent:
    event: str  # add, update, supersede, delete, restore, edit-by-user
    old_text: str | None
    new_text: str | None
    actor: str
    at: str


@dataclass(frozen=True, slots=True)
class FolderView:
    path: str
    files: int
    chunks: int
    last_sync: str = ""  # ISO-8601 or ""


@dataclass(frozen=True, slots=True)
class SyncProgress:
    done: int
    total: int
    current: str = ""  # file being processed
    phase: str = "indexing"


@dataclass(frozen=True, slots=True)
class SyncSummary:
    added: int
    updated: int
    removed: int
    unchanged: int
    skipped: tuple[tuple[str, str], ...] = ()  # (path, reason)
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class EventView:
    """One agent event (brain mcp's log_event) as the events screen shows it."""

    id: str
    when: str  # local "YYYY-MM-DD HH:MM"
    type: str
    importance: float
    agent: str
    session: str
    text: str


@dataclass(frozen=True, slots=True)
class SessionView:
    id: str
    title: str
    updated_at: str
    turns: int


@dataclass(frozen=True, slots=True)
class TurnView:
    """A past exchange, for resuming a session."""

    question: str
    answer: str
    sources: tuple[SourceView, ...] = ()
    memories: tuple[MemoryView, ...] = ()
    status: str = ""
    log_id: str | None = None
    conversations: tuple[ConversationView, ...] = ()
    truncated: bool = False  # cut off at the answer cap
    notes: tuple[str, ...] = ()  # see Finished.notes


@dataclass(frozen=True, slots=True)
class ModelView:
    name: str
    size_bytes: int = 0
    family: str = ""


@dataclass(frozen=True, slots=True)
class OllamaStatus:
    ok: bool
    version: str = ""
    message: str = ""  # why it is not usable
    hint: str = ""  # what to do about it
    model_missing: bool = False


# --- chat stream events (yielded by ChatAdapter.ask, in this order) --------------------------

@dataclass(frozen=True, slots=True)
class Retrieved:
    sources: tuple[SourceView, ...]
    memories: tuple[MemoryView, ...]
    low_confidence: bool
    log_id: str | None = None  # retrieval log entry, for 👍/👎
    empty_index: bool = False  # nothing indexed yet: the UI suggests adding a folder
    noted: MemoryView | None = None  # stored from an explicit "remember that …"
    warnings: tuple[str, ...] = ()  # e.g. the vector store lost its vectors
    conversations: tuple[ConversationView, ...] = ()  # earlier conversations recalled, [c<n>]
    time_range: str = ""  # the dates a phrase of the question named, described; "" for none


@dataclass(frozen=True, slots=True)
class Token:
    text: str


@dataclass(frozen=True, slots=True)
class Waiting:
    """Nothing from the model yet: what Ollama is doing ("loading qwen3:4b… 12 s", "reading
    3,200 prompt tokens… 41 s"), about once a second until the first token."""

    text: str


@dataclass(frozen=True, slots=True)
class Thinking:
    """More of the model's reasoning: shown dim and collapsed above the answer, never part of
    the answer's text."""

    text: str
    seconds: float  # since the reasoning began


@dataclass(frozen=True, slots=True)
class Replaced:
    """Text already shown changed side (e.g. untagged reasoning ended by `</think>`): show
    `text` as the answer and `thinking` as the reasoning instead."""

    text: str
    thinking: str = ""


@dataclass(frozen=True, slots=True)
class Finished:
    model: str
    tokens: int
    seconds: float
    cited: tuple[int, ...] = ()
    interrupted: bool = False
    session_id: str | None = None
    notice: str = ""  # e.g. the answer was cut off at the length limit (shown as a warning)
    text: str = ""  # the answer as stored, when known (what an interrupted turn kept)
    truncated: bool = False  # cut off at the answer cap: "continue" goes on from there
    notes: tuple[str, ...] = ()  # what the answer does not say of its grounding (answer_notes)
    conversations: tuple[ConversationView, ...] = ()  # as recalled, `cited` set
    read: str = ""  # what the server really read of the prompt ("read 412 new prompt tokens")


@dataclass(frozen=True, slots=True)
class Failed:
    message: str
    hint: str = ""
    partial: str = ""  # text streamed before the failure, kept
    session_id: str | None = None  # the session the failed turn was stored in


ChatEvent = Retrieved | Waiting | Thinking | Token | Replaced | Finished | Failed


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    sources: tuple[SourceView, ...] = field(default_factory=tuple)
    low_confidence: bool = False
    log_id: str | None = None
    warnings: tuple[str, ...] = ()  # e.g. the vector store lost its vectors
    dates: str = ""  # "files modified … (last week)", or that no file was and all dates were
