"""`brain sessions import`: past conversations from JSONL or a ChatGPT data export.

JSONL lines are `{"session", "role": "user"|"assistant", "text", "created_at", "title"?,
"ref"?}`. Consecutive lines of one session form turns: a user line starts a turn, the next
assistant line is its answer (further assistant lines are appended to it); an assistant line
with no question before it is a turn with an empty question. Each line's `ref` is kept and
returned in the `refs` of search hits containing it.

A ChatGPT export (`conversations.json`, or the export's .zip) is read by following each
conversation's `current_node` chain back to the root, keeping the visible user and assistant
text messages (system, tool calls and results, code and reasoning messages are left out).

Like `brain memory import` (one shared run record, `assistant/import_run.py`), every import is
recorded under the hash of its parsed turns: a killed run resumes after its last committed batch
(batches end at session boundaries, so a session is never split), and a completed one is refused
unless `again`. Each batch's sessions, turns, refs and the run's progress change in one
transaction; the batch is then indexed (a crash in between leaves turns the next index sync
picks up).
"""

from __future__ import annotations

import hashlib
import io
import json
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant import import_run
from assistant.errors import UserError
from assistant.import_run import AlreadyImported as AlreadyImported  # re-exported for callers
from assistant.import_run import ImportConflict as ImportConflict
from assistant.import_run import ImportRun as ImportRun
from assistant.import_run import RunTable
from assistant.memory.clock import check_plausible
from assistant.memory.transfer import LineError
from assistant.sessions.store import title_from

if TYPE_CHECKING:
    from assistant.conversations.index import ConversationIndex
    from assistant.sessions.store import SessionStore

_FIELDS = {"session", "role", "text", "created_at", "title", "ref"}


RUNS = RunTable("session_imports", unit="turns", command="brain sessions import")


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    session: str
    role: str
    text: str
    created_at: float
    title: str
    ref: str | None


@dataclass
class ImportedTurn:
    question: str
    answer: str
    created_at: float
    refs: list[tuple[str, str]] = field(default_factory=list)  # (role, ref)


@dataclass
class ImportedSession:
    key: str
    title: str
    turns: list[ImportedTurn] = field(default_factory=list)


@dataclass
class ParsedConversations:
    sessions: list[ImportedSession] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


@dataclass(frozen=True, slots=True)
class ImportReport:
    sessions: int
    turns: int
    already_stored: int = 0  # turns an interrupted earlier run had committed
    seconds: float = 0.0
    repaired: int = 0  # units indexed by a re-run of a run killed in its final (index) step


# --- reading ---------------------------------------------------------------------------------

def parse_time(value: Any) -> float:
    """ISO-8601 text (a `Z` or offset; naive = UTC) or Unix seconds → Unix seconds."""
    if isinstance(value, bool):
        raise ValueError('"created_at" must be an ISO date-time or Unix seconds')
    if isinstance(value, (int, float)):
        return check_plausible(float(value))
    if not isinstance(value, str) or not value.strip():
        raise ValueError('"created_at" must be an ISO date-time or Unix seconds')
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f'"created_at" {value!r} is not an ISO date-time') from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return check_plausible(moment.timestamp())


def parse_line(number: int, raw: str) -> Line:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError('expected a JSON object like {"session", "role", "text", "created_at"}')
    unknown = set(data) - _FIELDS
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(sorted(unknown))}")
    session, role, text = data.get("session"), data.get("role"), data.get("text")
    if isinstance(session, int) and not isinstance(session, bool):
        session = str(session)
    if not isinstance(session, str) or not session.strip():
        raise ValueError('"session" must be a non-empty string')
    if role not in ("user", "assistant"):
        raise ValueError('"role" must be "user" or "assistant"')
    if not isinstance(text, str) or not text.strip():
        raise ValueError('"text" must be a non-empty string')
    if "created_at" not in data:
        raise ValueError('"created_at" is missing')
    title, ref = data.get("title"), data.get("ref")
    if title is not None and not isinstance(title, str):
        raise ValueError('"title" must be a string')
    if ref is not None and not isinstance(ref, (str, int)):
        raise ValueError('"ref" must be a string')
    return Line(number, session.strip(), role, text.strip(), parse_time(data["created_at"]),
                (title or "").strip(), None if ref is None else str(ref))


def group_turns(lines: Iterable[Line]) -> list[ImportedSession]:
    """Consecutive lines of one session → its turns (see the module docstring)."""
    sessions: dict[str, ImportedSession] = {}
    order: list[ImportedSession] = []
    current: ImportedTurn | None = None
    current_key: str | None = None
    for line in lines:
        session = sessions.get(line.session)
        if session is None:
            session = sessions[line.session] = ImportedSession(line.session, line.title)
            order.append(session)
        if line.title and not session.title:
            session.title = line.title
        same = current is not None and current_key == line.session
        if line.role == "user" or not same:
            current = ImportedTurn("", "", line.created_at)
            current_key = line.session
            session.turns.append(current)
        assert current is not None
        if line.role == "user":
            current.question = line.text
        else:
            current.answer = f"{current.answer}\n{line.text}" if current.answer else line.text
        if line.ref is not None:
            current.refs.append((line.role, line.ref))
    for session in order:
        if not session.title:
            first = next((t.question or t.answer for t in session.turns), "")
            session.title = title_from(first)
    return order


def parse_jsonl(lines: Iterable[str]) -> ParsedConversations:
    parsed = ParsedConversations()
    good: list[Line] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            good.append(parse_line(number, raw))
        except ValueError as exc:
            parsed.errors.append(LineError(number, str(exc)))
    parsed.sessions = group_turns(good)
    return parsed


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content") or {}
    if content.get("content_type") not in ("text", "multimodal_text"):
        return ""  # code, execution_output, thoughts, reasoning_recap, tether_quote…
    parts = content.get("parts") or []
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip()).strip()


def chatgpt_lines(conversations: Sequence[Any], skipped: list[str] | None = None) -> list[str]:
    """A ChatGPT export's conversations as import JSONL lines (current branch only).

    A conversation that is not what ChatGPT writes (not an object, no mapping, a field of the
    wrong type) is left out with its reason appended to `skipped`; the others are imported.
    """
    out: list[str] = []
    for number, conversation in enumerate(conversations, start=1):
        why: str | None = None
        if not isinstance(conversation, dict):
            why = "is not a JSON object"
        elif not isinstance(conversation.get("mapping"), dict):
            why = "has no message mapping"
        else:
            try:
                out.extend(_conversation_lines(number, conversation))
                continue
            except (ValueError, TypeError, AttributeError) as exc:
                why = f"cannot be read ({type(exc).__name__}: {exc})"
        if skipped is None:
            raise UserError(f"conversation {number} of the export {why}",
                            hint="expected ChatGPT's conversations.json")
        skipped.append(f"conversation {number} of the export {why}; skipped")
    return out


def _conversation_lines(number: int, conversation: dict[str, Any]) -> list[str]:
    out: list[str] = []
    mapping: dict[str, Any] = conversation["mapping"]
    key = str(conversation.get("conversation_id") or conversation.get("id") or number)
    title = str(conversation.get("title") or "").strip()
    started = conversation.get("create_time")
    chain: list[dict[str, Any]] = []
    node_id = conversation.get("current_node")
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id] or {}
        if isinstance(node.get("message"), dict):
            chain.append(node["message"])
        node_id = node.get("parent")
    for message in reversed(chain):
        role = (message.get("author") or {}).get("role")
        metadata = message.get("metadata") or {}
        hidden = metadata.get("is_visually_hidden_from_conversation")
        if role not in ("user", "assistant") or hidden:
            continue
        if role == "assistant" and message.get("recipient", "all") != "all":
            continue  # a tool call, not words for the user
        text = _chatgpt_text(message)
        if not text:
            continue
        created = message.get("create_time") or started or 0
        line: dict[str, Any] = {"session": key, "role": role, "text": text,
                                "created_at": float(created)}
        if title:
            line["title"] = title
        if message.get("id"):
            line["ref"] = str(message["id"])
        out.append(json.dumps(line, ensure_ascii=False))
    return out


def read_source(
    path: Path | str, stdin: io.TextIOBase | None = None, skipped: list[str] | None = None
) -> tuple[list[str], str]:
    """The import lines of a file (`-` = stdin): JSONL as is, a ChatGPT export converted
    (odd conversations left out into `skipped`, see `chatgpt_lines`); returns (lines, kind)."""
    text = _read_text(path, stdin)
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(data, list) and any(isinstance(c, dict) and "mapping" in c for c in data):
            return chatgpt_lines(data, skipped), "chatgpt"
        raise UserError(f"{path}: a JSON list that is not a ChatGPT export",
                        hint="one JSON object per line, or ChatGPT's conversations.json")
    return text.splitlines(), "jsonl"


def _read_text(path: Path | str, stdin: io.TextIOBase | None) -> str:
    if str(path) == "-":
        import sys

        stream = stdin or sys.stdin
        try:
            data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
            return data.decode("utf-8") if isinstance(data, bytes) else str(data)
        except UnicodeDecodeError:
            raise UserError("stdin: not UTF-8 text") from None
    path = Path(path).expanduser()
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.endswith("conversations.json")]
                if not names:
                    raise UserError(f"{path}: a zip without conversations.json",
                                    hint="give ChatGPT's export .zip or its conversations.json")
                return archive.read(min(names, key=len)).decode("utf-8")
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a folder", hint="give a .jsonl file or conversations.json") \
            from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise UserError(f"{path}: cannot read ({exc})") from None


# --- writing --------------------------------------------------------------------------------

def content_hash(parsed: ParsedConversations) -> str:
    """sha256 of the parsed turns: the same conversations give the same hash however the
    lines were spelled."""
    digest = hashlib.sha256()
    for session in parsed.sessions:
        for turn in session.turns:
            digest.update(json.dumps(
                [session.key, session.title, turn.question, turn.answer, turn.created_at,
                 turn.refs], ensure_ascii=False).encode("utf-8") + b"\n")
    return digest.hexdigest()


def begin_run(
    store: SessionStore, digest: str, *, name: str, total: int, again: bool
) -> ImportRun:
    """The unfinished run of this content (resume), a new run, or `AlreadyImported`."""
    with store.transaction() as conn:
        return import_run.begin(conn, RUNS, digest, name=name, total=total, again=again,
                                now=store.clock())


def _session_id(run: ImportRun, key: str) -> str:
    # Deterministic per run and session: a resumed run never makes a second copy of a session
    # it had begun, and `again` (a new run) makes a fresh one.
    return hashlib.sha256(f"{run.id}\n{run.content_hash}\n{key}".encode()).hexdigest()[:8]


def _batches(sessions: Sequence[ImportedSession], size: int) -> list[list[ImportedSession]]:
    out: list[list[ImportedSession]] = [[]]
    count = 0
    for session in sessions:
        if count >= size:
            out.append([])
            count = 0
        out[-1].append(session)
        count += len(session.turns)
    return [b for b in out if b]


def _store_batch(
    store: SessionStore, run: ImportRun, batch: Sequence[ImportedSession], expected: int
) -> list[int]:
    """One transaction: the batch's sessions, turns and refs, and the run's progress."""
    turn_ids: list[int] = []
    count = sum(len(s.turns) for s in batch)
    with store.transaction() as conn:
        # First: another process that stored this batch already would make the sessions'
        # deterministic ids collide; the conflict is the message for it. Same transaction.
        import_run.advance(conn, RUNS, run, expected=expected, lines=count, added=count,
                           now=store.clock())
        for session in batch:
            sid = _session_id(run, session.key)
            first, last = session.turns[0].created_at, session.turns[-1].created_at
            conn.execute(
                "INSERT INTO sessions (id, title, created_at, updated_at, model) "
                "VALUES (?, ?, ?, ?, 'import')", (sid, session.title, first, max(first, last)))
            for seq, turn in enumerate(session.turns, start=1):
                cur = conn.execute(
                    "INSERT INTO turns (session_id, seq, question, answer, status, model, "
                    "created_at) VALUES (?, ?, ?, ?, 'complete', 'import', ?)",
                    (sid, seq, turn.question, turn.answer, turn.created_at))
                turn_id = int(cur.lastrowid or 0)
                turn_ids.append(turn_id)
                conn.executemany(
                    "INSERT INTO turn_refs (turn_id, position, role, ref) VALUES (?, ?, ?, ?)",
                    [(turn_id, i, role, ref) for i, (role, ref) in enumerate(turn.refs)])
    return turn_ids


def import_conversations(
    index: ConversationIndex,
    lines: Iterable[str],
    *,
    name: str = "the import",
    again: bool = False,
    batch_size: int = 256,
    progress: Callable[[int, int], None] | None = None,
    on_resume: Callable[[ImportRun], None] | None = None,
) -> tuple[ImportReport, list[LineError]]:
    """Store and index the good lines; returns the report and the bad lines."""
    start = time.perf_counter()
    parsed = parse_jsonl(lines)
    total = parsed.turn_count
    if not total:
        return ImportReport(0, 0), parsed.errors
    store = index.store
    try:
        run = begin_run(store, content_hash(parsed), name=name, total=total, again=again)
    except AlreadyImported:
        # A run killed after its last commit may still lack its index: then this re-run is
        # that run's end (not a repeat the user must confirm with --again), and says so.
        fixed = index.sync()
        if not fixed.indexed + fixed.repaired:
            raise
        return (ImportReport(0, 0, already_stored=total, repaired=fixed.indexed + fixed.repaired,
                             seconds=time.perf_counter() - start), parsed.errors)
    if run.committed and on_resume is not None:
        on_resume(run)
    done = 0
    stored_sessions = 0
    for batch in _batches(parsed.sessions, batch_size):
        count = sum(len(s.turns) for s in batch)
        if done + count <= run.committed:
            done += count
            continue
        turn_ids = _store_batch(store, run, batch, done)
        index.write(index.docs_for_turns(turn_ids))
        done += count
        stored_sessions += len(batch)
        if progress is not None:
            progress(done, total)
    index.sync()  # anything an interrupted earlier run stored but did not index
    return (ImportReport(stored_sessions, done - run.committed, run.committed,
                         time.perf_counter() - start), parsed.errors)
