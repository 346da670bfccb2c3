"""Memories: the pane's requests (edit, new, delete, pin, undo, history, forget all), listing
with filters, and the poll that shows memories extraction added in the background."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from tui.views import MemoryEvent, MemoryView
from tui.widgets.memory_pane import MemoryVerb
from tui.wording import plural
from tui.workers import Refresh, attempt

if TYPE_CHECKING:
    from tui.protocols import MemoryApi
    from tui.screens.chat import ChatScreen
    from tui.screens.memory_editor import MemoryDraft


class MemoryController:
    def __init__(self, screen: ChatScreen, *, poll_seconds: float) -> None:
        self.screen = screen
        self.poll_seconds = poll_seconds
        self._stamp = ""  # the newest updated_at seen, for the poll
        self.poll = Refresh(screen, "memory-poll", self._poll)
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
                         memory.id, "deleted", before=memory)

    def _pin(self, memory: MemoryView | None) -> None:
        if memory is not None:
            self._change("Pinning the memory",
                         lambda: self.api.pin(memory.id, not memory.pinned),
                         memory.id, "unpinned" if memory.pinned else "pinned")

    def _undo(self, memory: MemoryView | None) -> None:
        if memory is not None:
            self._change("Undoing the last change", lambda: self.api.undo(memory.id),
                         memory.id, "restored")

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

    def _change(self, action: str, call: Callable[[], MemoryView | None], memory_id: str | None,
                verb: str, *, before: MemoryView | None = None) -> None:
        self.screen.run_worker(self._apply(action, call, memory_id, verb, before),
                               group="memory")

    async def _apply(self, action: str, call: Callable[[], MemoryView | None],
                     memory_id: str | None, verb: str, before: MemoryView | None) -> None:
        # A 1-tuple: None is a result here (deleted), not a failure.
        done = await attempt(self.screen.app, action, lambda: (call(),))
        if done is None:
            return
        memory = done[0]
        if verb == "restored" and memory is not None and memory.status != "active":
            verb = "removed: undoing its addition deletes it"  # not "restored"
        pane = self.screen.memory_pane
        pane.apply_change(memory_id or (memory.id if memory else ""), memory)
        if memory is None and before is not None:
            pane.last_touched = before
        hint = " (u to undo)" if verb in ("deleted", "edited") else ""
        self.screen.notify(f"Memory {verb}{hint}", timeout=3)
        self.screen.status.refresh_stats()

    async def _forget(self) -> None:
        removed = await attempt(self.screen.app, "Forgetting everything", self.api.forget_all)
        if removed is None:
            return
        await self.screen.memory_pane.forgotten()
        self.screen.notify(f"Forgot {plural(removed, 'memory', 'memories')}.")
        self.screen.status.refresh_stats()

    # --- listing and the background poll ----------------------------------------------------

    def mode_changed(self, all_active: bool, type_: str | None, query: str) -> None:
        if all_active:
            # Exclusive: while the user types a filter, only the latest listing is shown.
            self.screen.run_worker(self._list(type_, query), group="memory-list",
                                   exclusive=True)

    async def _list(self, type_: str | None, query: str) -> None:
        memories = await attempt(
            self.screen.app, "Listing memories",
            lambda: self.api.list(all_active=True, type_=type_, query=query),
        )
        if memories is not None:
            await self.screen.memory_pane.show(memories, all_active=True)

    async def _poll(self) -> None:
        from assistant.daemon_pool import in_thread

        try:
            fresh, stamp = await in_thread(lambda: self.api.changes_since(self._stamp))
        except Exception:
            return  # the store may still be opening; the next tick tries again
        first = not self._stamp
        self._stamp = stamp
        if fresh and not first:
            self._arrived(fresh)

    def _arrived(self, memories: list[MemoryView]) -> None:
        self.screen.memory_pane.add_fresh(memories)
        count = len(memories)
        self.screen.notify(f"Learned {count} new memor{'y' if count == 1 else 'ies'} "
                           "(Ctrl+R shows all)", timeout=4)
        self.screen.status.refresh_stats()


