"""JSONL import and export of memories.

Import stores lines verbatim (no model, no dedup unless asked), in batches. Every line is
checked first; a bad line is reported with its number and the good ones are still imported.
Each import is recorded under the hash of its parsed lines: running an interrupted import again
resumes after its last stored batch, and a completed one is refused unless `again` (so a killed
import converges to the state of one clean run, and nothing is doubled silently).
Consecutive `episode` lines of one conversation (same `session`, else same `created_at`) are
indexed with their neighbouring lines as search context.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

from assistant.memory.clock import iso_of, parse_iso, typed_seconds
from assistant.memory.document import episode_context
from assistant.memory.import_runs import AlreadyImported, ImportReport, ImportRun
from assistant.memory.model import Memory, MemoryStatus, MemoryType, NewMemory, parse_type
from assistant.memory.secrets import find_secret_in
from assistant.memory.store import MemoryStore
from assistant.plain_text import json_text

_ACCEPTED = {"text", "type", "key", "created_at", "source", "importance", "confidence",
             "pinned", "session"}
_IGNORED = {"id", "status", "updated_at", "score", "last_used_at", "use_count"}  # from export


@dataclass(frozen=True, slots=True)
class LineError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParsedImport:
    items: list[NewMemory] = field(default_factory=list)
    sessions: list[str | None] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def _unit(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f'"{name}" must be a number between 0 and 1')
    return float(value)


def parse_line(raw: str) -> tuple[NewMemory, str | None]:
    """One import line → a memory to store; raises ValueError with a readable reason."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError('expected a JSON object like {"text": "…"}')
    unknown = set(data) - _ACCEPTED - _IGNORED
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(sorted(unknown))}")
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('"text" must be a non-empty string')
    for name in ("type", "key", "created_at", "source", "session"):
        if data.get(name) is not None and not isinstance(data[name], str):
            raise ValueError(f'"{name}" must be a string')
    secret = find_secret_in(text, key=data.get("key"))
    if secret:
        raise ValueError(f"not imported: {secret.message()}")
    mtype = parse_type(data["type"]) if data.get("type") else MemoryType.FACT
    created = None
    if data.get("created_at"):
        created = typed_seconds(parse_iso(data["created_at"]))
    pinned = data.get("pinned", False)
    if not isinstance(pinned, bool):
        raise ValueError('"pinned" must be true or false')
    memory = NewMemory(
        text=text.strip(),
        type=mtype,
        key=data.get("key") or None,
        created_at=created,
        source=data.get("source"),
        importance=_unit(data["importance"], "importance") if "importance" in data else 0.5,
        confidence=_unit(data["confidence"], "confidence") if "confidence" in data else 1.0,
        pinned=pinned,
    )
    return memory, data.get("session")


def parse_lines(lines: Iterable[str]) -> ParsedImport:
    parsed = ParsedImport()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            memory, session = parse_line(raw)
        except ValueError as exc:
            parsed.errors.append(LineError(number, str(exc)))
            continue
        parsed.items.append(memory)
        parsed.sessions.append(session)
    parsed.items = with_episode_context(parsed.items, parsed.sessions)
    return parsed


def with_episode_context(items: list[NewMemory], sessions: list[str | None]) -> list[NewMemory]:
    """Give each episode its neighbouring episodes of the same conversation as search context."""
    out = list(items)
    start = 0
    while start < len(items):
        if items[start].type is not MemoryType.EPISODE:
            start += 1
            continue
        group_key = sessions[start] or items[start].created_at
        end = start + 1
        while (
            end < len(items)
            and items[end].type is MemoryType.EPISODE
            and (sessions[end] or items[end].created_at) == group_key
            and group_key is not None
        ):
            end += 1
        texts = [m.text for m in items[start:end]]
        for offset in range(end - start):
            out[start + offset] = replace(items[start + offset],
                                          context=episode_context(texts, offset))
        start = end
    return out


def content_hash(parsed: ParsedImport) -> str:
    """sha256 of the parsed lines: the same memories in the same order give the same hash, however
    the JSON was spelled (key order, spacing, line endings, blank or bad lines)."""
    digest = hashlib.sha256()
    for item, session in zip(parsed.items, parsed.sessions, strict=True):
        # The time as ISO text, as hashed before schema step 8: a file imported then is still
        # recognised (resumed or refused as a repeat) now.
        when = iso_of(item.created_at) if item.created_at is not None else None
        fields = [item.text, item.type.value, item.key, when, item.source,
                  item.importance, item.confidence, item.pinned, session]
        digest.update(json.dumps(fields, ensure_ascii=False).encode("utf-8") + b"\n")
    return digest.hexdigest()


def import_memories(
    store: MemoryStore,
    lines: Iterable[str],
    *,
    dedup: bool = False,
    again: bool = False,
    name: str = "the import",
    batch_size: int = 512,
    progress: Callable[[int, int], None] | None = None,
    on_resume: Callable[[ImportRun], None] | None = None,
) -> tuple[ImportReport, list[LineError]]:
    """Store the good lines of a JSONL import; returns the report and the bad lines.

    Resumes an interrupted run of the same content (`on_resume(run)` is told first); raises
    `AlreadyImported` for content imported in full before unless `again`. Every line of a new
    import is stored, also one identical to an existing memory, unless `dedup` (similarity ≥ 0.9).
    """
    parsed = parse_lines(lines)
    if not parsed.items:
        return ImportReport(added=0, skipped_duplicates=0), parsed.errors
    try:
        run = store.begin_import(content_hash(parsed), name=name, total=len(parsed.items),
                                 again=again)
    except AlreadyImported as refused:
        repaired = store.sync_vectors()
        if refused.run.final_step_done:
            raise
        # The previous run stored every line and was killed in its final vector step: say
        # so (it is not a repeat the user must confirm with --again) and finish it.
        store.finish_import(refused.run)
        return ImportReport(added=0, skipped_duplicates=0, already_stored=refused.run.total,
                            finished_earlier=True, repaired=repaired), parsed.errors
    if run.committed and on_resume is not None:
        on_resume(run)
    report = store.add_many(
        parsed.items, batch_size=batch_size, dedup_threshold=0.9 if dedup else None,
        progress=progress, run=run,
    )
    # A run killed between its last commit and its vector upsert left rows without vectors.
    store.sync_vectors()
    store.finish_import(run)
    return report, parsed.errors


def export_row(memory: Memory) -> dict[str, Any]:
    """One memory as an export line (what `parse_line` reads back, `_IGNORED` fields too)."""
    return {
        "text": memory.text,
        "type": memory.type.value,
        "key": memory.key,
        "created_at": iso_of(memory.created_at),
        "source": memory.source,
        "importance": memory.importance,
        "confidence": memory.confidence,
        "pinned": memory.pinned,
        "id": memory.id,
        "status": memory.status.value,
        "updated_at": iso_of(memory.updated_at),
    }


def export_memories(store: MemoryStore, out: TextIO, *, include_inactive: bool = False) -> int:
    """Write the memories oldest first, one JSON line each; returns how many."""
    statuses = None if include_inactive else (MemoryStatus.ACTIVE,)
    count = 0
    for memory in reversed(store.list(statuses=statuses)):
        out.write(json_text(export_row(memory)) + "\n")  # exact JSON, nothing a terminal obeys
        count += 1
    return count

