"""`brain memory import` run again after it was interrupted resumes instead of doubling what the
first run already stored (found by the SIGKILL test in test_faults.py; this is its fast twin)."""

from __future__ import annotations

import json
from typing import Any

from assistant.memory.transfer import import_memories


def _lines() -> list[str]:
    rows = [{"text": f"The user owns plant number {i}.", "type": "fact"} for i in range(40)]
    rows.append({"text": "Said twice.", "type": "fact"})
    rows.append({"text": "Said twice.", "type": "fact"})
    rows.append({"text": "Dated.", "created_at": "2024-01-02T03:04:05Z", "source": "D1:1"})
    rows.append({"text": "Dated.", "created_at": "2024-05-06T07:08:09Z", "source": "D1:1"})
    return [json.dumps(r) for r in rows]


def _texts(store: Any) -> list[str]:
    return sorted(m.text for m in store.list())


def test_a_partial_import_run_again_ends_as_one_clean_import(memory_store: Any) -> None:
    lines = _lines()
    # The first run got through some batches before it was killed.
    import_memories(memory_store, lines[:21], batch_size=8)
    report, errors = import_memories(memory_store, lines, batch_size=8)
    assert not errors
    assert report.added == len(lines) - 21 and report.skipped_duplicates == 21
    assert len(memory_store.list()) == len(lines)
    assert _texts(memory_store).count("Said twice.") == 2
    assert _texts(memory_store).count("Dated.") == 2


def test_repeated_lines_are_kept_until_every_copy_is_stored(memory_store: Any) -> None:
    lines = _lines()
    twice = lines.index(json.dumps({"text": "Said twice.", "type": "fact"}))
    import_memories(memory_store, lines[: twice + 1])  # only the first copy made it
    import_memories(memory_store, lines)
    assert _texts(memory_store).count("Said twice.") == 2
    assert len(memory_store.list()) == len(lines)


def test_a_memory_the_user_deleted_comes_back_on_a_new_import(memory_store: Any) -> None:
    lines = _lines()
    import_memories(memory_store, lines)
    victim = next(m for m in memory_store.list() if m.text == "The user owns plant number 3.")
    memory_store.delete(victim.id)
    report, _ = import_memories(memory_store, lines)
    assert report.added == 1
    assert "The user owns plant number 3." in _texts(memory_store)
