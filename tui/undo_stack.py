"""The UI's undo stack: memory changes made in this run (the pane's keys, "remember that…" in
the chat), newest last, each taken back by the version its change gave the memory.

Undoing a change gives the memory a new version (the store logs the restore), so the change
before it on the same memory would no longer match its recorded version: `p`, `d`, `u`, `u`
failed at the second `u`. After an undo, the next older entry of that memory takes the
restored version — but only when nothing else changed the memory between the two (its
recorded version is the one the undone change started from). Otherwise that older entry keeps
its version, and undoing it is refused by the store ("changed since"): a change made
elsewhere is never undone by surprise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

DEPTH = 50  # the CLI's `brain memory undo` steps back as far as the history goes


@dataclass(frozen=True, slots=True)
class Undoable:
    """A change made here: the memory and the version that change gave it."""

    memory_id: str
    version: int
    done: str  # "deleted", "edited", … for the messages
    text: str  # the memory's text, to say what the next undo reverts

    @property
    def before(self) -> int:
        """The version the memory had just before this change (every change adds one)."""
        return self.version - 1


class UndoStack:
    def __init__(self) -> None:
        self._entries: list[Undoable] = []

    def __len__(self) -> int:
        return len(self._entries)

    def push(self, entry: Undoable) -> None:
        self._entries = [*self._entries[-DEPTH + 1:], entry]

    def peek(self) -> Undoable | None:
        return self._entries[-1] if self._entries else None

    def pop(self) -> Undoable | None:
        return self._entries.pop() if self._entries else None

    def undone(self, entry: Undoable, restored_version: int) -> None:
        """`entry` was taken back and its memory is now at `restored_version`: the change
        before it on that memory, if it came right before, now expects that version."""
        for n in range(len(self._entries) - 1, -1, -1):
            older = self._entries[n]
            if older.memory_id == entry.memory_id:
                if older.version == entry.before:
                    self._entries[n] = replace(older, version=restored_version)
                return

    def clear(self) -> None:
        self._entries.clear()

    def describe(self) -> str:
        """What the next undo reverts, for the status line ("" when nothing)."""
        top = self.peek()
        if top is None:
            return ""
        return f"undo: {top.done} “{_short(top.text)}”"


def _short(text: str, width: int = 32) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
