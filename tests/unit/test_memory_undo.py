"""Undo restores exactly what a change did, whatever happened in between (issue 13: in the
memory pane, `d` then `u` after moving the cursor deleted a *different* memory). The pane's
side is the TUI's; here the core contract: undo by the version a change returned, or by the
change id (history seq), touches that memory only and refuses when it changed since."""

from __future__ import annotations

import pytest

from assistant.memory.model import Actor, Event, MemoryStatus, NewMemory
from assistant.memory.store import ConcurrentChange, MemoryStore, NothingToUndo


def _four(store: MemoryStore) -> list[str]:
    return [store.add(NewMemory(f"The user owns {thing}")).id
            for thing in ("a red bike", "a blue kayak", "a green tent", "a grey van")]


def _states(store: MemoryStore) -> dict[str, tuple[str, bool, str]]:
    return {m.id: (m.status.value, m.pinned, m.text) for m in store.list(statuses=None)}


def test_undo_by_version_restores_the_deleted_memory_and_nothing_else(
    memory_store: MemoryStore,
) -> None:
    a, b, c, d = _four(memory_store)
    deleted = memory_store.delete(c)
    # Meanwhile: the user pins another memory, extraction adds one, recall marks some used.
    memory_store.pin(b)
    memory_store.add(NewMemory("The user owns a kite", evidence=("I bought a kite",)),
                     actor=Actor.ASSISTANT)
    memory_store.mark_used([a, d])
    before = _states(memory_store)
    restored = memory_store.undo(c, expected_version=deleted.version)
    assert restored.id == c and restored.status is MemoryStatus.ACTIVE
    after = _states(memory_store)
    assert after[c][0] == "active"
    assert {k: v for k, v in after.items() if k != c} == {
        k: v for k, v in before.items() if k != c}
    assert memory_store.count(MemoryStatus.DELETED) == 0


def test_undo_by_change_id_after_other_changes(memory_store: MemoryStore) -> None:
    a, b, c, _d = _four(memory_store)
    memory_store.delete(c)
    change = memory_store.latest_change(c)
    assert change is not None and change.event is Event.DELETE
    memory_store.delete(a)
    memory_store.edit(b, "The user owns a yellow kayak")
    assert memory_store.undo_change(change.seq).status is MemoryStatus.ACTIVE
    states = _states(memory_store)
    assert states[c][0] == "active" and states[a][0] == "deleted"
    assert states[b][2] == "The user owns a yellow kayak"
    with pytest.raises(NothingToUndo, match="already undone"):
        memory_store.undo_change(change.seq)


def test_undo_refuses_when_the_memory_changed_since(memory_store: MemoryStore) -> None:
    _a, _b, c, _d = _four(memory_store)
    deleted = memory_store.delete(c)
    change = memory_store.latest_change(c)
    assert change is not None
    # Another process edits it (which brings it back): undoing the delete now would be a guess.
    memory_store.edit(c, "The user owns a green two-person tent")
    before = _states(memory_store)
    with pytest.raises(ConcurrentChange, match="nothing was undone"):
        memory_store.undo(c, expected_version=deleted.version)
    with pytest.raises(ConcurrentChange, match=f"memory {c} changed after that"):
        memory_store.undo_change(change.seq)
    assert _states(memory_store) == before
    memory_store.undo(c)  # undo the edit: the memory is again exactly as the delete left it
    assert memory_store.undo_change(change.seq).status is MemoryStatus.ACTIVE


def test_a_later_change_that_was_undone_does_not_block(memory_store: MemoryStore) -> None:
    m = memory_store.add(NewMemory("The user drinks tea"))
    memory_store.pin(m.id)
    pinned = memory_store.latest_change(m.id)
    assert pinned is not None
    memory_store.edit(m.id, "The user drinks coffee")
    memory_store.undo(m.id)  # undoes the edit
    restored = memory_store.undo_change(pinned.seq)
    assert not restored.pinned and restored.text == "The user drinks tea"


def test_unknown_change(memory_store: MemoryStore) -> None:
    with pytest.raises(NothingToUndo, match="no memory change 999"):
        memory_store.undo_change(999)
