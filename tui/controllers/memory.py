"""Memories: the pane's requests (edit, new, delete, pin, undo, history, forget all), listing
with filters, and the poll that keeps the pane and the status line on what is stored.

Undo (`u` in the pane, F11 anywhere) takes back the changes made in this run, newest first,
each by the version its change gave the memory (tui/undo_stack.py): `d` then `u` restores
exactly the memory deleted, wherever the cursor went meanwhile, and never touches another one
(if something else changed that memory since, nothing is undone and the user is told); `p`,
`d`, `u`, `u` reverts both. The status line says what the next undo reverts. Changes run one
at a time, in the order the keys were pressed.

The poll asks the store for its version (SQLite's `PRAGMA data_version`: one statement) on a
timer, off the event loop; only when it moved — a change here, extraction, or another process
such as `brain memory rm` — is the list read again and the status line's count updated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.undo_stack import Undoable, UndoStack
from tui.views import MemoryChanges, MemoryEvent, MemoryView
from tui.widgets.memory_pane import MemoryVerb
from tui.wording import plural
from tui.workers import Refresh, Repeats, attempt, quietly

if TYPE_CHECKING:
    from tui.protocols import MemoryApi
    from tui.screens.chat import ChatScreen
    from tui.screens.memory_editor import MemoryDraft


class MemoryController:
    def __init__(self, screen: ChatScreen, *, poll_seconds: float) -> None:
        self.screen = screen
        self.poll_seconds = poll_seconds
        self.seen: MemoryChanges | None = None  # where the store stood at the last poll
        self._poll_failures = Repeats()
        self.poll = Refresh(screen, "memory-poll", self._poll)
        # The list shown again after a change or a filter edit: one listing at a time, the
        # last one with the filters as they are then (never cancelled: see MemoryPane._fill).
        self.relist = Refresh(screen, "memory-list", self._relist)
        self.undoable = UndoStack()
        self._one_at_a_time = asyncio.Lock()
        self._handlers: dict[MemoryVerb, Callable[[MemoryView | None], None]] = {
            "edit": self._edit, "new": self._new, "delete": self._delete, "pin": self._pin,
            "undo": self._undo, "history": self._history, "forget_all": self._forget_all,
        }

    @property
    def api(self) -> MemoryApi:
        return self.screen.backend.memory

    def start(self) -> None:
        self.screen.set_interval(self.poll_seconds, self.poll)

    def request(self, verb: MemoryVerb, memory: MemoryView | None) -> None:
        self._handlers[verb](memory)

    # --- the pane's requests ----------------------------------------------------------------

    def _edit(self, memory: MemoryView | None) -> None:
        from tui.screens.memory_editor import MemoryEditor

        if memory is None:
            return

        def edited(draft: MemoryDraft | None) -> None:
            if draft is not None and draft.text != memory.text:
                self._change("Editing the memory", lambda: self.api.edit(memory.id, draft.text),
                             memory.id, "edited")

        self.screen.app.push_screen(MemoryEditor(memory), edited)

    def _new(self, _: MemoryView | None) -> None:
        from tui.screens.memory_editor import MemoryEditor

        def added(draft: MemoryDraft | None) -> None:
            if draft is not None:
                self._change("Adding the memory", lambda: self.api.add(draft.text, draft.type),
                             None, "added")

        self.screen.app.push_screen(MemoryEditor(None), added)

    def _delete(self, memory: MemoryView | None) -> None:
        if memory is not None:
            self._change("Deleting the memory", lambda: self.api.delete(memory.id),
                         memory.id, "deleted")

    def _pin(self, memory: MemoryView | None) -> None:
        if memory is not None:
            self._change("Pinning the memory",
                         lambda: self.api.pin(memory.id, not memory.pinned),
                         memory.id, "unpinned" if memory.pinned else "pinned")

    def _undo(self, _: MemoryView | None) -> None:
        """Whatever is selected: the pane's latest change is the one taken back."""
        self.screen.run_worker(self._take_back(), group="memory")

    def _history(self, memory: MemoryView | None) -> None:
        from tui.screens.memory_history import MemoryHistory

        if memory is None:
            return

        async def show() -> None:
            events: list[MemoryEvent] | None = await attempt(
                self.screen.app, "Reading the history", lambda: self.api.history(memory.id))
            if events is not None:
                self.screen.app.push_screen(MemoryHistory(memory, events))

        self.screen.run_worker(show(), group="memory")

    def _forget_all(self, _: MemoryView | None) -> None:
        from tui.screens.confirm import ConfirmScreen

        def confirmed(yes: bool | None) -> None:
            if yes:
                self.screen.run_worker(self._forget(), group="memory")

        self.screen.app.push_screen(ConfirmScreen(
            "Forget everything?\nEvery memory, its history and its vectors are deleted "
            "for good. This cannot be undone.", yes="Forget everything", danger=True,
        ), confirmed)

    # --- carrying them out ------------------------------------------------------------------

    def _change(self, action: str, call: Callable[[], MemoryView], memory_id: str | None,
                verb: str) -> None:
        self.screen.run_worker(self._apply(action, call, memory_id, verb), group="memory")

    async def _apply(self, action: str, call: Callable[[], MemoryView], memory_id: str | None,
                     verb: str) -> None:
        async with self._one_at_a_time:
            memory = await attempt(self.screen.app, action, call)
            if memory is None:
                return
            self.remember_change(memory, verb)
            await self._shown(memory_id or memory.id, memory, f"Memory {verb} (u to undo)")

    def remember_change(self, memory: MemoryView, verb: str) -> None:
        """A change made in this run, for undo (the pane's, or "remember that…" in the chat)."""
        self.undoable.push(Undoable(memory.id, memory.version, verb, memory.text))
        self._show_undo()

    def _show_undo(self) -> None:
        text = self.undoable.describe()
        key = self.screen.app_key("undo")
        self.screen.status_bar.undo = f"{text} ({key})" if text and key else text

    async def _take_back(self) -> None:
        async with self._one_at_a_time:
            last = self.undoable.pop()
            if last is None:
                self.screen.notify(
                    "Nothing to undo: u takes back the memory changes made in this run. h "
                    "shows a memory's history; `brain memory undo ID` undoes any change.",
                    severity="warning", timeout=6)
                return
            memory = await attempt(
                self.screen.app, "Undoing the last change",
                lambda: self.api.undo(last.memory_id, expected_version=last.version))
            self._show_undo()
            if memory is None:
                return
            self.undoable.undone(last, memory.version)
            if memory.status != "active" and last.done == "added":
                done = "Memory removed: undoing its addition deletes it"  # not "restored"
            else:
                done = f"Undone: memory {last.done}"
            await self._shown(last.memory_id, memory, f"{done} — {_short(memory.text)}")

    async def _shown(self, memory_id: str, memory: MemoryView, message: str) -> None:
        await self.screen.memory_pane.apply_change(memory_id, memory)
        self.screen.notify(message, timeout=3)
        self.poll()  # the count, and the list in the order the store keeps

    async def _forget(self) -> None:
        removed = await attempt(self.screen.app, "Forgetting everything", self.api.forget_all)
        if removed is None:
            return
        self.undoable.clear()
        self._show_undo()
        await self.screen.memory_pane.forgotten()
        self.screen.notify(f"Forgot {plural(removed, 'memory', 'memories')}.")
        self.poll()

    # --- listing and the background poll ----------------------------------------------------

    def mode_changed(self, all_active: bool, type_: str | None, query: str) -> None:
        if all_active:  # (the filters are read from the pane when the listing runs)
            self.relist()

    async def _relist(self) -> None:
        pane = self.screen.memory_pane
        if pane.all_active:
            type_, query = pane.type_filter, pane.filter_text
            memories = await attempt(
                self.screen.app, "Listing memories",
                lambda: self.api.list(all_active=True, type_=type_, query=query),
            )
            if memories is not None:
                await pane.show(memories, all_active=True)
        elif pane.used:
            shown = pane.used
            now = await attempt(self.screen.app, "Reading memories",
                                lambda: self.api.current([m.id for m in shown]))
            if now is not None and pane.used is shown:  # (a new answer may have replaced them)
                await pane.show([m for m in now if m.status == "active"], all_active=False)

    async def _poll(self) -> None:
        seen = self.seen
        # The store may still be opening: quiet, the next tick tries again (a bug is logged once).
        changes = await attempt(self.screen.app, "Reading memory changes", lambda: self.api.changes(
            seen.version if seen else -1, seen.stamp if seen else None),
            shown=quietly, repeats=self._poll_failures)
        if changes is None:
            return
        self.seen = changes
        self.screen.status_bar.memories = changes.count
        self.relist()
        if changes.learned and seen is not None:
            await self._arrived(list(changes.learned))

    async def _arrived(self, memories: list[MemoryView]) -> None:
        await self.screen.memory_pane.add_fresh(memories)
        count = len(memories)
        self.screen.notify(f"Learned {count} new memor{'y' if count == 1 else 'ies'} "
                           "(Ctrl+R shows all)", timeout=4)


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
