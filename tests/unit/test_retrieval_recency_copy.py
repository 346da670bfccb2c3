"""Issue 23 (9): every file of a folder copied today got the recency boost. The boost follows a
file's content time (indexing/content_time.py): a bulk copy's stamp is no edit, a `touch` is
no edit, an edit is; files written one by one keep their own times."""

from __future__ import annotations

import os
import time
from pathlib import Path

from assistant.config import RetrievalConfig
from assistant.retrieval.hybrid import HybridRetriever, KnowledgeSearch
from assistant.retrieval.recency import SECONDS_PER_DAY
from indexing.content_time import COPY_FILES, COPY_SECONDS, copied_together
from tests.fixtures.knowledge import KnowledgeHarness

TEXT = "# {name}\n\nThe {name} notes: kayak paddles, tents and the {name} campsite list.\n"


def _boosts(knowledge: KnowledgeHarness, kb: KnowledgeSearch) -> dict[str, float]:
    retriever = HybridRetriever(kb, knowledge.embedder, RetrievalConfig(per_file=1))
    hits = retriever.search("kayak paddles tents campsite", top_k=50).hits
    return {Path(h.source).name: h.recency_boost for h in hits}


def test_a_folder_copied_today_is_not_all_fresh_but_an_edit_is(
    knowledge: KnowledgeHarness
) -> None:
    names = [f"trip{n}" for n in range(COPY_FILES + 2)]
    for name in names:  # `cp -r` of an old folder: every file stamped now
        knowledge.write(f"copied/{name}.md", TEXT.format(name=name))
    week = time.time() - 6 * SECONDS_PER_DAY
    for n, name in enumerate(("monday", "wednesday", "friday")):  # edited one by one this week
        path = knowledge.write(f"diary/{name}.md", TEXT.format(name=name))
        stamp = week + n * 2 * SECONDS_PER_DAY
        os.utime(path, (stamp, stamp))
    kb = knowledge.open()
    kb.add_folder(knowledge.notes)
    kb.sync(knowledge.settings())
    boosts = _boosts(knowledge, kb)
    assert set(boosts) >= {f"{n}.md" for n in names} | {"friday.md"}, boosts
    assert all(boosts[f"{n}.md"] == 0.0 for n in names), boosts
    assert boosts["friday.md"] > boosts["wednesday.md"] > boosts["monday.md"] > 0, boosts

    edited = knowledge.notes / "copied" / "trip3.md"
    edited.write_text(TEXT.format(name="trip3") + "\nAdded: two dry bags.\n", encoding="utf-8")
    touched = knowledge.notes / "copied" / "trip4.md"
    later = time.time() + 5
    os.utime(touched, (later, later))  # new mtime, same content
    os.utime(knowledge.notes / "diary" / "monday.md", (later, later))
    kb.sync(knowledge.settings())
    boosts = _boosts(knowledge, kb)
    assert boosts["trip3.md"] > 0.19, boosts  # edited just now: nearly the full +20 %
    assert boosts["trip4.md"] == 0.0, boosts  # touched: still the copy, no edit
    assert boosts["monday.md"] < boosts["wednesday.md"], boosts  # touch kept its time


def test_only_many_new_files_within_a_minute_are_a_copy() -> None:
    base = 1_800_000_000.0
    burst = {f"c{n}": base + n for n in range(COPY_FILES)}
    spread = {f"s{n}": base - (n + 1) * 10 * COPY_SECONDS for n in range(COPY_FILES)}
    assert copied_together(burst | spread) == set(burst)
    assert copied_together(dict(list(burst.items())[:-1])) == set()  # one short of a copy
