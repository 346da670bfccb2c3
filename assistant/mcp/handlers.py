"""What each `brain mcp` tool does: blocking calls on the same services as the CLI.

`BrainTools` opens each store on first use (nothing at start-up: the first `initialize` is
answered before any of this is imported) and keeps it for the life of the server; the server
runs each store's calls on that store's own thread (server.py), so SQLite connections stay on
one thread and two clients' calls to one store are served one after the other.
Every result is `Output(structured, text)`: the structured content and a short plain-text
rendering for clients that show only text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assistant.errors import UserError
from assistant.mcp.arguments import ToolInputError
from assistant.services import Services

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex
    from assistant.events.model import Event, NewEvent
    from assistant.events.service import EventService
    from assistant.memory.service import MemoryService
    from assistant.retrieval.hybrid import HybridRetriever
    from assistant.timerange import TimeRange
    from indexing.knowledge import KnowledgeBase

SNIPPET_CHARS = 300
INLINE_WAIT_MS = 20  # log_event on the event loop waits this long for another writer at most


@dataclass(frozen=True, slots=True)
class Output:
    structured: dict[str, Any]
    text: str


@dataclass(frozen=True, slots=True)
class Caller:
    """Who called: the MCP client's name and version from its initialize handshake."""

    name: str
    version: str = ""

    @property
    def via(self) -> str:
        return f"mcp:{self.name} {self.version}".strip()


def _short(text: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _new_event(args: dict[str, Any], caller: Caller) -> NewEvent:
    from assistant.events.model import EventType, NewEvent

    return NewEvent(type=EventType(args["type"]), text=args["text"],
                    importance=args["importance"], agent=caller.name, session=args["session"],
                    parent=args["parent"], ts=parse_ts(args["ts"]))


def time_range(since: str | None, until: str | None) -> TimeRange | None:
    """since/until arguments as a TimeRange, with the argument's name in any error."""
    from assistant.timeflags import parse_bound
    from assistant.timerange import TimeRange, local_now

    if not since and not until:
        return None
    now = local_now()
    try:
        start = parse_bound(since, now, end=False, flag="since") if since else None
        stop = parse_bound(until, now, end=True, flag="until") if until else None
    except UserError as exc:
        raise ToolInputError(f"{exc.message}: {exc.hint}" if exc.hint else str(exc)) from None
    if start is not None and stop is not None and stop <= start:
        raise ToolInputError(f"until {until!r} is not after since {since!r}")
    return TimeRange(start, stop, " ".join(filter(None, (since, until))), "flag")


def parse_ts(text: str | None) -> float | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolInputError(f"ts {text!r} is not an ISO-8601 date-time "
                             "(e.g. 2026-03-05T14:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as the user reads it
    return moment.timestamp()


class BrainTools:
    def __init__(self, services: Services, *,
                 on_event: Callable[[], None] | None = None) -> None:
        self.services = services
        self.ctx = services.ctx
        self.allow_writes = self.ctx.config.mcp.allow_writes
        self._on_event = on_event

    # --- stores: the server's one Services opens each on first use ---------------------------

    def retriever(self) -> HybridRetriever:
        return self.services.retriever()

    def plain_knowledge(self) -> KnowledgeBase:
        """The knowledge base without the embedding model (resources: folders, files)."""
        return self.services.light_knowledge()

    def memory(self) -> MemoryService:
        return self.services.memory_service()

    def conversations(self) -> ConversationIndex:
        return self.services.conversations()

    def events(self) -> EventService:
        return self.services.events()  # also from the idle thread (background.py)

    def close(self) -> None:
        self.services.close()

    # --- tools -------------------------------------------------------------------------------

    def search_knowledge(self, args: dict[str, Any], caller: Caller) -> Output:
        from assistant.retrieval.contract import result_to_json

        found = time_range(args["since"], args["until"])
        result = self.retriever().search(args["query"], top_k=args["top_k"],
                                         in_path=args["path"], modified=found)
        data = result_to_json(result, time_range=found.to_json() | {"applied": True}
                              if found else None)
        for shown, hit in zip(data["hits"], result.hits, strict=True):
            shown["lines"] = [hit.chunk.start_line, hit.chunk.end_line]
        if result.warnings:
            data["warnings"] = list(result.warnings)
        lines = [f"{len(result.hits)} passages for {args['query']!r}"
                 + (" (low confidence: nothing matches strongly)" if result.low_confidence
                    else "")]
        for hit in result.hits:
            lines.append(f"[{hit.rank}] {hit.source}:{hit.chunk.start_line}-"
                         f"{hit.chunk.end_line} {hit.heading}".rstrip())
            lines.append(f"    {_short(hit.chunk.text)}")
        return Output(data, "\n".join(lines))

    def search_conversations(self, args: dict[str, Any], caller: Caller) -> Output:
        from assistant.conversations.search import search_conversations

        found = time_range(args["since"], args["until"])
        index = self.conversations()
        index.sync()  # turns stored since the last call (the TUI may be chatting meanwhile)
        result = search_conversations(index, args["query"], time_range=found,
                                      top_k=args["top_k"])
        data = result.to_json()
        lines = [f"{len(result.hits)} conversation matches for {args['query']!r}"]
        for hit in result.hits:
            relevance = "" if hit.score is None else f" {hit.score:.0%}"
            lines.append(f"[{hit.rank}] {hit.title} ({hit.session_id}){relevance}")
            if hit.question:
                lines.append(f"    user: {_short(hit.question, 200)}")
            if hit.answer:
                lines.append(f"    assistant: {_short(hit.answer, 200)}")
        return Output(data, "\n".join(lines))

    def recall_memories(self, args: dict[str, Any], caller: Caller) -> Output:
        found = self.memory().search(args["query"], args["top_k"])
        data = {"query": args["query"],
                "memories": [r.memory.to_json(score=r.score) for r in found]}
        lines = [f"{len(found)} memories for {args['query']!r}"]
        lines += [f"[{r.memory.id}] ({r.memory.type.value}) {_short(r.memory.text)}"
                  for r in found]
        return Output(data, "\n".join(lines))

    def remember(self, args: dict[str, Any], caller: Caller) -> Output:
        from assistant.memory.model import MemoryType

        proposed = self.memory().remember_for_agent(
            args["text"].strip(), type=MemoryType(args["type"]),
            key=(args["key"] or "").strip() or None, via=caller.via)
        memory = proposed.memory
        if memory is None:
            raise UserError("not stored: the user changed that memory meanwhile; recall it "
                            "again and retry")
        status = "stored" if proposed.stored else "already known"
        return Output({"status": status, "memory": memory.to_json()},
                      f"{status}: [{memory.id}] {_short(memory.text)}")

    def forget_memory(self, args: dict[str, Any], caller: Caller) -> Output:
        from assistant.memory.model import Actor, MemoryStatus
        from assistant.memory.store import MemoryNotFound

        store = self.memory().store
        memory_id = args["id"].strip()
        # The whole id, never a prefix: a model must not delete a memory it did not name.
        found = store.get_many([memory_id]).get(memory_id)
        if found is None or found.status is not MemoryStatus.ACTIVE:
            raise MemoryNotFound(f"no active memory with id {memory_id!r} (ids come from "
                                 "recall_memories)")
        with store.on_behalf_of(caller.via):
            gone = store.delete(memory_id, actor=Actor.AGENT)
        return Output({"status": "forgotten", "memory": gone.to_json()},
                      f"forgotten: [{gone.id}] {_short(gone.text)} (the user can undo this)")

    def log_event(self, args: dict[str, Any], caller: Caller) -> Output:
        return self._logged(self.events().store.log(_new_event(args, caller)))

    def log_event_now(self, args: dict[str, Any], caller: Caller) -> Output | None:
        """`log_event` on the calling thread if the log is open and free at once (None: run
        it on the store's thread). A log_event is one short write: the hand-off to a thread
        and back cost more than the write (server.py)."""
        service = self.services.peek_events()
        if service is None:
            return None
        event = service.store.try_log(_new_event(args, caller), wait_ms=INLINE_WAIT_MS)
        return None if event is None else self._logged(event)

    def _logged(self, event: Event) -> Output:
        if self._on_event is not None:
            self._on_event()
        return Output({"event": event.to_json()}, f"logged {event.type.value} {event.id}")

    def query_events(self, args: dict[str, Any], caller: Caller) -> Output:
        from assistant.events.matrix import Filters
        from assistant.events.model import EventType

        found = time_range(args["since"], args["until"])
        since, until = found.bounds if found is not None else (None, None)
        filters = Filters(types=tuple(EventType(t) for t in args["types"] or ()),
                          since=since, until=until, session=args["session"],
                          min_importance=args["min_importance"])
        hits = self.events().search(args["query"], filters=filters, top_k=args["top_k"])
        data = {"query": args["query"],
                "events": [h.event.to_json(score=h.score) for h in hits]}
        lines = [f"{len(hits)} events"]
        for hit in hits:
            e = hit.event
            lines.append(f"[{e.id}] {e.to_json()['ts']} {e.type.value} "
                         f"(importance {e.importance:.2f}) {_short(e.text, 200)}")
        return Output(data, "\n".join(lines))


# Which store's thread runs each tool (server.py keeps one thread per store).
STORE_OF = {
    "search_knowledge": "knowledge", "search_conversations": "conversations",
    "recall_memories": "memory", "remember": "memory", "forget_memory": "memory",
    "log_event": "events", "query_events": "events",
}
