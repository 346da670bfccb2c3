"""An in-memory backend for pilot tests and snapshots: deterministic data, scriptable stream.

It implements `tui.protocols.Backend` faithfully (blocking calls, UserError on bad input) so
the UI logic is tested fast and deterministically; the integration tests in
test_core_backend.py drive the same app over the real core.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assistant.errors import UserError
from tui.views import (
    ChatEvent,
    ConversationSearch,
    ConversationView,
    EventView,
    Finished,
    FolderView,
    MemoryChanges,
    MemoryEvent,
    MemoryView,
    ModelView,
    OllamaStatus,
    Retrieved,
    SearchResult,
    SessionView,
    SourceView,
    SyncProgress,
    SyncSummary,
    Token,
    TurnView,
)

STAMP = "2026-01-15T09:30:00"
# The first turn of each fake session, as `FakeSessions.search` finds it.
PAST_TURNS = {
    "s1": ("How do I apply a stash?", "Use `git stash pop` [1]."),
    "s2": ("Shall we take the kayak on Saturday?", "We decided to take the kayak on Saturday."),
}


def sample_sources() -> tuple[SourceView, ...]:
    return (
        SourceView(1, "c1", "/notes/git/stash.md", "git/stash.md", "Stash > Apply",
                   "Use `git stash pop` to apply the latest stash and drop it.\n"
                   "`git stash apply` keeps it in the list.", 12, 15, 0.82, 0.91, 1, True),
        SourceView(2, "c2", "/notes/git/branch.md", "git/branch.md", "Branches",
                   "Create a branch with git switch -c NAME.", 3, 4, 0.61, None, 2, False),
        SourceView(3, "c3", "/notes/shell/tar.md", "shell/tar.md", "", "tar -xzf archive.tgz",
                   1, 1, None, 0.40, 3, False),
    )


def sample_memories() -> list[MemoryView]:
    return [
        MemoryView("m1", "preference", "Prefers short answers with examples", "reply_style",
                   True, "active", STAMP),
        MemoryView("m2", "fact", "Works on a Rust compiler team", "job", False, "active", STAMP),
        MemoryView("m3", "procedure", "Deploys with `make release` on Fridays", None, False,
                   "active", STAMP),
    ]


class FakeOllamaApi:
    """The TUI's `OllamaApi` (tui/protocols.py: status and installed models) in memory: no
    server, no HTTP. `tests.fake_ollama.FakeOllamaServer` is the one that speaks the wire."""

    def __init__(self) -> None:
        self.up = True
        self.installed = ["qwen3:4b", "llama3.2:3b"]

    def server_name(self) -> str:
        return "Ollama"

    def status(self, model: str) -> OllamaStatus:
        if not self.up:
            return OllamaStatus(False, message="Ollama is not running at http://127.0.0.1:11434",
                                hint="Start it with `ollama serve`.")
        if model not in self.installed:
            return OllamaStatus(False, "0.6.0", f"model {model!r} is not installed",
                                f"ollama pull {model}", model_missing=True)
        return OllamaStatus(True, "0.6.0")

    def models(self) -> list[ModelView]:
        if not self.up:
            raise UserError("Ollama is not running", "Start it with `ollama serve`.")
        return [ModelView(n, 2_500_000_000) for n in self.installed]


class FakeKnowledge:
    def __init__(self) -> None:
        self.folders_: dict[str, FolderView] = {}
        self.loaded = threading.Event()
        self.hold_load = False  # tests of "loading model…" keep it pending
        self.sync_gate: threading.Event | None = None  # paused mid-sync until set
        self.sync_calls: list[tuple[tuple[str, ...] | None, bool]] = []

    def warm_up(self) -> None:
        if self.hold_load:
            self.loaded.wait(10)

    def stats(self) -> tuple[int, int]:
        return (sum(f.files for f in self.folders_.values()),
                sum(f.chunks for f in self.folders_.values()))

    def folders(self) -> list[FolderView]:
        return sorted(self.folders_.values(), key=lambda f: f.path)

    def add_folder(self, path: Path) -> FolderView:
        if not path.is_dir():
            raise UserError(f"not a folder: {path}")
        key = str(path)
        if key in self.folders_:
            raise UserError(f"{path} is already indexed")
        self.folders_[key] = FolderView(key, 0, 0)
        return self.folders_[key]

    def remove_folder(self, path: str) -> None:
        if self.folders_.pop(path, None) is None:
            raise UserError(f"{path} is not an indexed folder")

    def sync(self, folders: Sequence[str] | None, *, rebuild: bool,
             progress: Callable[[SyncProgress], None]) -> SyncSummary:
        self.sync_calls.append((tuple(folders) if folders else None, rebuild))
        chosen = list(folders) if folders else list(self.folders_)
        added = 0
        skipped: list[tuple[str, str]] = []
        for key in chosen:
            files = sorted(p for p in Path(key).rglob("*") if p.is_file())
            kept = [p for p in files if p.suffix in (".md", ".txt", ".py")]
            skipped += [(str(p), "unsupported file type") for p in files if p not in kept]
            for i, p in enumerate(kept, 1):
                progress(SyncProgress(i, len(kept), str(p)))
                if self.sync_gate is not None and i == 1:
                    self.sync_gate.wait(10)
            self.folders_[key] = FolderView(key, len(kept), 2 * len(kept), STAMP)
            added += len(kept)
        return SyncSummary(added, 0, 0, 0, tuple(skipped), 0.5)

    def search(self, query: str) -> SearchResult:
        return SearchResult(query, sample_sources(), False, "log-search")

    def watch(self, on_change: Callable[[str], None], stop: threading.Event) -> None:
        on_change(f"watching {len(self.folders_)} folders")
        stop.wait()


class FakeMemory:
    """Like the store: every change bumps the memory's `version` and the store's; undo takes
    back the memory's latest change only when `expected_version` is still current (undoing an
    add deletes); a change by "another process" is just a call from the test."""

    def __init__(self) -> None:
        self.items: dict[str, MemoryView] = {m.id: m for m in sample_memories()}
        self.previous: dict[str, list[MemoryView | None]] = {}
        self.events: dict[str, list[MemoryEvent]] = {}
        self.version = 0
        self.changed_at: dict[str, int] = {}  # memory id -> store version of its last change
        self.actor: dict[str, str] = {}  # memory id -> who changed it last
        self._next = 100

    def _record(self, memory_id: str, before: MemoryView | None, after: MemoryView,
                event: str, actor: str = "user", *, undoing: bool = False) -> MemoryView:
        after = replace(after, version=(before.version if before else 0) + 1)
        if not undoing:
            self.previous.setdefault(memory_id, []).append(before)
        self.events.setdefault(memory_id, []).append(MemoryEvent(
            event, before.text if before else None, after.text, actor, STAMP))
        self.items[memory_id] = after
        self.version += 1
        self.changed_at[memory_id] = self.version
        self.actor[memory_id] = actor
        return after

    def _get(self, memory_id: str) -> MemoryView:
        try:
            return self.items[memory_id]
        except KeyError:
            raise UserError(f"no memory with id {memory_id}") from None

    def list(self, *, all_active: bool, type_: str | None, query: str) -> list[MemoryView]:
        out = [m for m in self.items.values() if m.status == "active"]
        if type_:
            out = [m for m in out if m.type == type_]
        if query:
            out = [m for m in out if query.lower() in m.text.lower()]
        return out

    def count(self) -> int:
        return sum(m.status == "active" for m in self.items.values())

    def add(self, text: str, type_: str, *, actor: str = "user") -> MemoryView:
        self._next += 1
        memory = MemoryView(f"m{self._next}", type_, text, None, False, "active", STAMP)
        return self._record(memory.id, None, memory, "add", actor)

    def edit(self, memory_id: str, text: str) -> MemoryView:
        before = self._get(memory_id)
        return self._record(memory_id, before, replace(before, text=text), "edit-by-user")

    def delete(self, memory_id: str) -> MemoryView:
        before = self._get(memory_id)
        if before.status == "deleted":
            raise UserError(f"memory {memory_id} is already deleted")
        return self._record(memory_id, before, replace(before, status="deleted"), "delete")

    def pin(self, memory_id: str, pinned: bool) -> MemoryView:
        before = self._get(memory_id)
        if before.pinned == pinned:
            return before
        return self._record(memory_id, before, replace(before, pinned=pinned), "edit-by-user")

    def undo(self, memory_id: str, *, expected_version: int) -> MemoryView:
        memory = self._get(memory_id)
        if memory.version != expected_version:
            raise UserError(f"memory {memory_id} changed since (version {memory.version}, "
                            f"expected {expected_version}); nothing was undone")
        stack = self.previous.get(memory_id)
        if not stack:
            raise UserError(f"nothing to undo for memory {memory_id}")
        restored = stack.pop()
        target = restored if restored is not None else replace(memory, status="deleted")
        return self._record(memory_id, memory, target, "restore",
                            undoing=True)

    def current(self, ids: Sequence[str]) -> builtins.list[MemoryView]:
        return [self.items[i] for i in ids if i in self.items]

    def history(self, memory_id: str) -> builtins.list[MemoryEvent]:
        self._get(memory_id)
        return list(self.events.get(memory_id, []))

    def forget_all(self) -> int:
        n = len(self.items)
        self.items.clear()
        self.events.clear()
        self.previous.clear()
        self.version += 1
        return n

    def changes(self, version: int, stamp: float | None) -> MemoryChanges | None:
        if version == self.version:
            return None
        since = stamp
        learned = () if since is None else tuple(
            self.items[i] for i, v in self.changed_at.items()
            if v > since and i in self.items and self.actor.get(i) == "assistant")
        return MemoryChanges(self.version, self.count(), float(self.version), learned)


@dataclass
class ChatScript:
    tokens: list[str] = field(default_factory=lambda: [
        "Use ", "`git stash pop` ", "to apply and drop the stash [1].\n\n",
        "```bash\ngit stash pop\n```\n",
    ])
    low_confidence: bool = False
    gate: threading.Event | None = None  # when set, the stream waits here after token 1
    fail_with: UserError | None = None
    notice: str = ""  # Finished.notice, e.g. the answer was cut off
    warnings: tuple[str, ...] = ()  # Retrieved.warnings, e.g. the vectors are missing
    conversations: tuple[ConversationView, ...] = ()  # earlier conversations recalled, [c<n>]
    time_range: str = ""  # Retrieved.time_range: the dates the question named


NOTE_PREFIX = "remember that"


class FakeTurn:
    """One scripted answer: the `tui.protocols.ChatTurn` of FakeChat."""

    def __init__(self, chat: FakeChat, model: str, text: str = "") -> None:
        self.chat = chat
        self.model = model
        self.text = text
        self.cancel_requested = False

    def cancel(self) -> None:
        self.cancel_requested = True

    def __aiter__(self) -> AsyncIterator[ChatEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[ChatEvent]:
        chat, script, model = self.chat, self.chat.script, self.model
        if self.text.lower().startswith(NOTE_PREFIX):  # as the engine: stored, no model asked
            noted = chat.memory.add(self.text[len(NOTE_PREFIX):].strip(), "fact")
            yield Retrieved((), (noted,), False, f"log-{len(chat.asked)}", noted=noted)
            yield Token(f"Noted: {noted.text}")
            yield Finished(model, 1, 0.01, session_id="s1", text=f"Noted: {noted.text}")
            return
        used = tuple(m for m in chat.memory.items.values() if m.status == "active")[:2]
        yield Retrieved(sample_sources(), used, script.low_confidence,
                        f"log-{len(chat.asked)}", warnings=script.warnings,
                        conversations=script.conversations, time_range=script.time_range)
        if not chat.ollama.up:
            raise UserError("Ollama is not running at http://127.0.0.1:11434",
                            "Start it with `ollama serve`.")
        if script.fail_with is not None:
            raise script.fail_with
        count = 0
        for i, token in enumerate(script.tokens):
            if self.cancel_requested:
                chat.cancelled.set()
                yield Finished(model, count, 0.4, interrupted=True, session_id="s1")
                return
            yield Token(token)
            count += 1
            await asyncio.sleep(0)
            if i == 0 and script.gate is not None:
                while not (script.gate.is_set() or self.cancel_requested):
                    await asyncio.sleep(0.01)
        yield Finished(model, count, 1.25, cited=(1,), session_id="s1", notice=script.notice,
                       conversations=tuple(replace(c, cited=f"[c{c.number}]" in "".join(
                           script.tokens)) for c in script.conversations))


class FakeChat:
    def __init__(self, ollama: FakeOllamaApi, memory: FakeMemory) -> None:
        self.ollama = ollama
        self.memory = memory
        self.script = ChatScript()
        self.feedback_log: list[tuple[str, int]] = []
        self.right_sources: list[tuple[str, str]] = []
        self.extracted_through = 0
        self.left_pending = 0  # turns an earlier run left unextracted
        self.extract_calls = 0
        self.asked: list[tuple[str | None, str, str]] = []
        self.closed = False
        self.cancelled = threading.Event()
        self.warmed = False
        self.preloaded: list[tuple[str | None, str]] = []  # (session, model) per preload
        self.configured: list[dict[str, Any]] = []  # settings applied live, in order

    async def warm_up(self) -> None:
        self.warmed = True

    async def preload(self, session_id: str | None, model: str) -> float:
        from assistant.llm.errors import ChatError

        self.preloaded.append((session_id, model))
        if not self.ollama.up:  # as the engine says it
            raise ChatError("unavailable", "Ollama is not running at http://127.0.0.1:11434",
                            "Start it with `ollama serve`.")
        return 0.0

    async def ask(self, session_id: str | None, text: str, *, model: str) -> FakeTurn:
        self.asked.append((session_id, text, model))
        return FakeTurn(self, model, text)

    async def configure(self, changes: dict[str, Any]) -> None:
        self.configured.append(dict(changes))

    def feedback(self, log_id: str, rating: int) -> None:
        self.feedback_log.append((log_id, rating))

    async def pending_extraction(self) -> int:
        return self.left_pending + len(self.asked) - self.extracted_through

    def mark_right_source(self, log_id: str, path: str) -> None:
        self.right_sources.append((log_id, path))

    async def extract_pending(self) -> int:
        # Like the engine: the finished turns not extracted yet, once.
        pending = self.left_pending + len(self.asked) - self.extracted_through
        self.extracted_through = len(self.asked)
        self.left_pending = 0
        self.extract_calls += 1
        return pending

    async def close(self) -> None:
        self.closed = True


class FakeSessions:
    def __init__(self) -> None:
        self.sessions = {
            "s1": SessionView("s1", "Git questions", STAMP, 1),
            "s2": SessionView("s2", "Rust lifetimes", "2026-01-14T18:00:00", 3),
        }
        self.exported: list[tuple[str, Path]] = []
        self.searches: list[str] = []

    def list(self) -> list[SessionView]:
        return sorted(self.sessions.values(), key=lambda s: s.updated_at, reverse=True)

    def create(self) -> SessionView:
        session = SessionView(f"s{len(self.sessions) + 1}", "", STAMP, 0)
        self.sessions[session.id] = session
        return session

    def turns(self, session_id: str) -> builtins.list[TurnView]:
        if session_id not in self.sessions:
            raise UserError(f"no session {session_id}")
        return [TurnView("How do I apply a stash?", "Use `git stash pop` [1].",
                         sample_sources(), (), "qwen3:4b · 9 tokens · 1.0 s", "log-old")]

    def rename(self, session_id: str, title: str) -> None:
        self.sessions[session_id] = replace(self.sessions[session_id], title=title)

    def delete(self, session_id: str) -> None:
        del self.sessions[session_id]

    def export_markdown(self, session_id: str, path: Path) -> Path:
        path.write_text(f"# {self.sessions[session_id].title}\n", encoding="utf-8")
        self.exported.append((session_id, path))
        return path

    def search(self, text: str) -> ConversationSearch:
        """Word matches over each session's one turn; `since:` other than 7d is refused like
        a date the core cannot read."""
        self.searches.append(text)
        words = [w for w in text.lower().split() if not w.startswith("since:")]
        if any(w.startswith("since:") and w != "since:7d" for w in text.lower().split()):
            raise UserError("--since: cannot read that date", "use 2024-03-05, 7d, 2w or 3m")
        # `builtins.list`: in this class `list` is the method (the backend protocol's name).
        hits: builtins.list[ConversationView] = []
        for session in self.list():
            question, answer = PAST_TURNS.get(session.id, ("", ""))
            if words and all(w in f"{session.title} {question} {answer}".lower()
                             for w in words):
                hits.append(ConversationView(len(hits) + 1, session.id, session.title,
                                             session.updated_at[:16], question, answer, 1))
        dates = "2026-01-08 → 2026-01-15 (7d)" if "since:7d" in text else ""
        topic = " ".join(words)
        found = (f"{len(hits)} conversation{'' if len(hits) == 1 else 's'} about {topic!r}"
                 if hits else f"nothing about {topic!r}")
        return ConversationSearch(text, tuple(hits), dates,
                                  found + (f" · dates: {dates}" if dates else ""))


class FakeEvents:
    """The agent event log in memory, the EventsApi protocol; `log` is what an agent wrote."""

    def __init__(self) -> None:
        self.events: list[EventView] = []
        self.changes = 0
        self.due = 0  # runs waiting for a summary
        self.summary_calls = 0

    def log(self, text: str, *, type: str = "action", agent: str = "claude-code") -> EventView:
        event = EventView(f"ev{len(self.events):04d}", "2026-01-15 09:30", type, 0.5, agent,
                          "s1", text)
        self.events.insert(0, event)
        self.changes += 1
        return event

    def list(self) -> list[EventView]:
        return list(self.events)

    def search(self, text: str) -> builtins.list[EventView]:
        words = text.lower().split()
        return [e for e in self.events if any(w in e.text.lower() for w in words)]

    def remove(self, event_id: str) -> int:
        before = len(self.events)
        self.events = [e for e in self.events if e.id != event_id]
        self.changes += 1
        return before - len(self.events)

    def version(self) -> int:
        return self.changes

    def summarize_due(self) -> int:
        """One summary per call while `due` runs remain (the real one asks the model)."""
        self.summary_calls += 1
        if not self.due:
            return 0
        self.due -= 1
        self.log("summary of a run", type="summary", agent="second-brain")
        return 1


class FakeBackend:
    def __init__(self) -> None:
        self.ollama = FakeOllamaApi()
        self.knowledge = FakeKnowledge()
        self.memory = FakeMemory()
        self.chat = FakeChat(self.ollama, self.memory)
        self.sessions = FakeSessions()
        self.events = FakeEvents()

    def close(self) -> None:
        pass
