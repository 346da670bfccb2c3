"""The memories section of the chat prompt on LoCoMo: precision and recall of what it carries.

Each conversation's turns are imported as `episode` memories (as in bench/memory.py), and each
question of categories 1-4 is recalled twice: against its own conversation (on topic: the
memories holding its evidence turns are the relevant ones) and against the next conversation
(off topic: other people's lives, as "Summarize this text in three bullets" is off topic for
every memory; any memory it carries is noise). What is measured is the relevant part of the
section, `memory.recall`'s search items (the profile and pinned ones are always carried):

- precision: relevant memories carried / memories carried, over both kinds of question;
- recall: evidence memories carried / evidence memories, on-topic questions;
- off-topic questions that carry no memory at all.

"before" is the relevance floor off (the top `memory.top_k` always carried), "after" the default
floor (`RelevanceFloor`), both in the same run; the sweep over floors is in the details.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import Report, locomo_file
from bench.memory import import_lines, questions


@dataclass(frozen=True, slots=True)
class Carried:
    """One question's search items: (cosine, keyword, relevant) each, best first."""

    on_topic: bool
    evidence: int
    items: tuple[tuple[float | None, float, bool], ...]


def run(quick: bool) -> Report:
    tmp = Path(tempfile.mkdtemp(prefix="bench-memory-prompt-"))
    try:
        return _run(quick, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(quick: bool, tmp: Path) -> Report:
    data = json.loads(locomo_file().read_text(encoding="utf-8"))
    conversations = data[:3] if quick else data
    carried = _collect(conversations, tmp, per_conversation=40 if quick else None)
    return report_of(carried, quick=quick, conversations=len(conversations))


def report_of(carried: list[Carried], *, quick: bool, conversations: int) -> Report:
    from assistant.memory.recall import RelevanceFloor

    report = Report("memory_prompt", quick)
    before = _score(carried, None)
    after = _score(carried, RelevanceFloor())
    report.add("memories_precision", after["precision"], unit="ratio",
               baseline=before["precision"], baseline_name="no floor (top 5 always)")
    report.add("memories_recall", after["recall"], unit="ratio", baseline=before["recall"],
               baseline_name="no floor (top 5 always)")
    report.add("off_topic_questions_without_memories", after["off_topic_empty"], unit="ratio",
               baseline=before["off_topic_empty"], baseline_name="no floor (top 5 always)")
    report.add("memories_per_on_topic_question", after["per_on_topic"], unit="",
               baseline=before["per_on_topic"], baseline_name="no floor (top 5 always)")
    report.details = {
        "conversations": conversations,
        "questions": sum(1 for c in carried if c.on_topic),
        "floor": str(RelevanceFloor()),
        "before": before,
        "after": after,
        "sweep": _sweep(carried),
    }
    return report


def _collect(conversations: list[dict[str, Any]], tmp: Path, *,
             per_conversation: int | None) -> list[Carried]:
    from assistant.config import Config
    from assistant.context import AppContext
    from assistant.memory.recall import RecallSettings, search
    from assistant.memory.service import MemoryService
    from assistant.memory.transfer import import_memories
    from assistant.paths import AppPaths
    from indexing.embedder import make_embedder

    embedder = make_embedder("bundled", cache_dir=tmp / "embed-cache", batch_size=64,
                             device="cpu")
    services = []
    for n, conversation in enumerate(conversations):
        root = tmp / f"home{n}"
        paths = AppPaths(root / "config", root / "data", root / "cache").ensure()
        service = MemoryService.open(AppContext(paths=paths, config=Config(),
                                                _embedder=embedder))
        _, errors = import_memories(service.store, import_lines(conversation))
        assert not errors, errors[:3]
        services.append(service)
        print(f"  conversation {n + 1}/{len(conversations)} imported", flush=True)
    top_k = RecallSettings().top_k
    out: list[Carried] = []
    try:
        for n, conversation in enumerate(conversations):
            asked = questions(conversation)[:per_conversation]
            other = services[(n + 1) % len(services)]
            for _, question, evidence in asked:
                for service, on_topic in ((services[n], True), (other, False)):
                    found = search(service.store, question, top_k=top_k)
                    out.append(Carried(on_topic, len(evidence), tuple(
                        (r.cosine, r.keyword, on_topic and (r.memory.source or "") in evidence)
                        for r in found)))
    finally:
        for service in services:
            service.close()
    return out


def _score(carried: list[Carried], floor: Any) -> dict[str, float]:
    from assistant.memory.model import Memory, MemoryStatus, MemoryType, RecalledMemory

    probe = Memory(id="m", type=MemoryType.EPISODE, key=None, text="", confidence=1.0,
                   importance=0.5, status=MemoryStatus.ACTIVE, pinned=False, created_at=0.0,
                   updated_at=0.0, last_used_at=None, use_count=0, source=None)

    def kept(items: tuple[tuple[float | None, float, bool], ...]) -> list[bool]:
        return [relevant for cosine, keyword, relevant in items
                if floor is None or floor.admits(RecalledMemory(probe, 0.0, 0.0, "relevant",
                                                                 cosine, keyword))]

    total = relevant = found = wanted = empty_off = on = off = on_total = 0
    for c in carried:
        chosen = kept(c.items)
        total += len(chosen)
        relevant += sum(chosen)
        if c.on_topic:
            on += 1
            on_total += len(chosen)
            found += sum(chosen)
            wanted += c.evidence
        else:
            off += 1
            empty_off += not chosen
    return {
        "precision": relevant / total if total else 1.0,
        "recall": found / wanted if wanted else 0.0,
        "off_topic_empty": empty_off / off if off else 0.0,
        "per_on_topic": on_total / on if on else 0.0,
        "per_off_topic": (total - on_total) / off if off else 0.0,
    }


def _sweep(carried: list[Carried]) -> list[dict[str, Any]]:
    from assistant.memory.recall import RelevanceFloor

    rows = []
    for min_cosine in np.round(np.arange(0.2, 0.61, 0.05), 2):
        for keyword in (0.5, 0.75, 1.0, 2.0):  # 2.0: no keyword exception
            for keyword_cosine in (0.1, 0.2, 0.3):
                if keyword_cosine >= min_cosine:
                    continue
                floor = RelevanceFloor(float(min_cosine), keyword, keyword_cosine)
                rows.append({"floor": [float(min_cosine), keyword, keyword_cosine]}
                            | _score(carried, floor))
    return rows
