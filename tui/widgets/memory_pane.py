"""What the assistant remembers about the user: the memories used for this answer, or all.

The pane only displays and asks; the app applies changes to the store in workers and feeds
the results back (`apply_change`, `add_fresh`, `show`), so what is shown is always what is
stored.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar, Literal, TypeGuard, get_args

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, ListItem, ListView, Select, Static

from assistant.plain_text import plain
from tui.views import MemoryView

MEMORY_TYPES = ("fact", "preference", "episode", "procedure")
FRESH_SECONDS = 3.0


# What the pane asks its controller to do (the `request('…')` bindings).
MemoryVerb = Literal["edit", "new", "delete", "pin", "undo", "history", "forget_all"]


def is_memory_verb(text: str) -> TypeGuard[MemoryVerb]:
    return text in get_args(MemoryVerb)


def memory_label(memory: MemoryView) -> str:
    pin = "📌 " if memory.pinned else ""
    key = f" {memory.key}:" if memory.key else ""
    return plain(f"{pin}[{memory.type}]{key} {memory.text}")


class MemoryItem(ListItem):
    def __init__(self, memory: MemoryView) -> None:
        super().__init__(Static(memory_label(memory), markup=False))
        self.memory = memory

    def flash(self) -> None:
        """Highlight a memory just learned, for a moment."""
        self.add_class("-fresh")
        self.set_timer(FRESH_SECONDS, lambda: self.remove_class("-fresh"))

    def refresh_memory(self, memory: MemoryView) -> None:
        self.memory = memory
        self.query_one(Static).update(memory_label(memory))


class FilterInput(Input):
    """The memory filter: Esc clears it, and Esc on an empty filter returns to the list."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "clear", "Clear filter")]

    def action_clear(self) -> None:
        if self.value:
            self.value = ""  # Input.Changed refreshes the list
        else:
            pane = next((a for a in self.ancestors if isinstance(a, MemoryPane)), None)
            if pane is not None:
                pane.list_view.focus()


class MemoryPane(Vertical):
    BORDER_TITLE = "Memories"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "toggle_all", "Used/All"),
        Binding("e", "request('edit')", "Edit"),
        Binding("d,delete", "request('delete')", "Delete"),
        Binding("p", "request('pin')", "Pin"),
        Binding("u", "request('undo')", "Undo"),
        Binding("h", "request('history')", "History"),
        Binding("n", "request('new')", "New"),
        Binding("F", "request('forget_all')", "Forget all", show=False),
        Binding("slash", "focus_filter", "Filter", show=False),
    ]

    class Requested(Message):
        """The user asked for `verb` on `memory` (None for new, forget_all and undo)."""

        def __init__(self, verb: MemoryVerb, memory: MemoryView | None) -> None:
            super().__init__()
            self.verb = verb
            self.memory = memory

    class ModeChanged(Message):
        def __init__(self, all_active: bool, type_: str | None, query: str) -> None:
            super().__init__()
            self.all_active = all_active
            self.type_ = type_
            self.query = query

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.all_active = False
        self.used: tuple[MemoryView, ...] = ()
        self._updating = asyncio.Lock()
        self._filled = False  # which list the rows are (all_active), to rebuild on a switch

    def compose(self) -> ComposeResult:
        yield Static("Used for this answer", classes="pane-caption", markup=False)
        yield ListView(id="memory-list")

    def _filters(self) -> Horizontal | None:
        found = self.query("#memory-filters")
        return found.first(Horizontal) if found else None

    def _ensure_filters(self) -> Horizontal:
        """The filter row is built on first use: its widgets' CSS is not needed at startup."""
        filters = self._filters()
        if filters is None:
            filters = Horizontal(
                FilterInput(placeholder="filter…", id="memory-filter"),
                Select([(t, t) for t in MEMORY_TYPES], prompt="any type", id="memory-type",
                       allow_blank=True),
                id="memory-filters",
            )
            self.mount(filters, before=self.list_view)
        return filters

    @property
    def list_view(self) -> ListView:
        return self.query_one(ListView)

    @property
    def type_filter(self) -> str | None:
        found = self.query(Select)  # empty until the filter row is first mounted
        value = found.first().value if found else None
        return value if isinstance(value, str) else None

    @property
    def filter_text(self) -> str:
        found = self.query(Input)
        return found.first(Input).value.strip() if found else ""

    @property
    def items(self) -> list[MemoryItem]:
        return list(self.query(MemoryItem))

    @property
    def updating(self) -> bool:
        """True while a listing is being applied (rows and then the cursor)."""
        return self._updating.locked()

    def selected(self) -> MemoryView | None:
        item = self.list_view.highlighted_child
        return item.memory if isinstance(item, MemoryItem) else None

    async def show_used(self, memories: tuple[MemoryView, ...]) -> None:
        self.used = memories
        await self._fill(list(memories), all_active=False)

    async def show(self, memories: list[MemoryView], *, all_active: bool) -> None:
        await self._fill(memories, all_active=all_active)

    async def forgotten(self) -> None:
        """Every memory was deleted: nothing to show."""
        self.used = ()
        await self._fill([], all_active=self.all_active)

    async def _fill(self, memories: list[MemoryView], *, all_active: bool) -> None:
        """Show `memories` if the pane still shows that list (used or all).

        One update at a time, and none is ever cancelled midway: a worker cancelled while it
        awaits a removal cancels the removed rows' own tasks, which leaves rows Textual can no
        longer process. Within one list the rows are updated, removed and inserted in place,
        not rebuilt, so a refresh from the poll keeps the cursor on its memory.
        """
        async with self._updating:
            if all_active != self.all_active:
                return
            caption = "All active memories" if all_active else "Used for this answer"
            if not memories:
                caption += " — none" if all_active or self.used else " — none yet"
            self.query_one(".pane-caption", Static).update(caption)
            view = self.list_view
            if self._filled != all_active:  # the other list: in its own order
                self._filled = all_active
                await view.clear()
                await view.extend(MemoryItem(m) for m in memories)
                view.index = 0 if memories else None
                return
            wanted = {m.id for m in memories}
            gone = [n for n, item in enumerate(self.items) if item.memory.id not in wanted]
            if gone:
                await view.remove_items(gone)
            shown = {item.memory.id: item for item in self.items}
            for position, memory in enumerate(memories):
                item = shown.get(memory.id)
                if item is None:
                    await self._insert(position, MemoryItem(memory))
                elif item.memory != memory:
                    item.refresh_memory(memory)

    async def _insert(self, position: int, item: MemoryItem) -> None:
        view = self.list_view
        if position < len(self.items):
            await view.insert(position, [item])
        else:
            await view.extend([item])
        if view.index is None:
            view.index = 0

    async def apply_change(self, memory_id: str, memory: MemoryView) -> None:
        """Reflect a stored change at once: update the row, or drop it when no longer active.
        (A memory that became active again comes back with the next listing, where the store
        lists it.)"""
        async with self._updating:
            for index, item in enumerate(self.items):
                if item.memory.id == memory_id:
                    if memory.status != "active":
                        await self.list_view.pop(index)
                    else:
                        item.refresh_memory(memory)
                    return

    async def add_fresh(self, memories: list[MemoryView], *, to_used: bool = False) -> None:
        """Memories from background extraction: shown at once with a short highlight.
        `to_used`: the user's own "remember that…": also added to the used list, first, so the
        pane shows it whichever list is open."""
        if to_used and not self.all_active:
            fresh = {m.id for m in memories}
            await self.show_used((*memories, *(m for m in self.used if m.id not in fresh)))
            return
        async with self._updating:
            if not self.all_active:
                return
            known = {item.memory.id: item for item in self.items}
            for memory in memories:
                item = known.get(memory.id)
                if item is not None:
                    item.refresh_memory(memory)
                elif memory.status == "active":
                    item = MemoryItem(memory)
                    await self._insert(0, item)
                else:
                    continue
                item.flash()

    def action_toggle_all(self) -> None:
        self.all_active = not self.all_active
        self._ensure_filters().display = self.all_active
        self._mode_changed()
        if not self.all_active:
            self.run_worker(self._fill(list(self.used), all_active=False), group="memfill")

    def _mode_changed(self) -> None:
        self.post_message(self.ModeChanged(self.all_active, self.type_filter, self.filter_text))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.all_active:
            self._mode_changed()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if self.all_active:
            self._mode_changed()

    def action_focus_filter(self) -> None:
        if not self.all_active:
            self.action_toggle_all()
        self.call_after_refresh(lambda: self.query_one(Input).focus())

    def action_request(self, verb: str) -> None:
        if not is_memory_verb(verb):
            return
        # Undo takes back the pane's latest change, not something about the selection.
        memory = None if verb == "undo" else self.selected()
        if verb not in ("new", "forget_all", "undo") and memory is None:
            self.notify("Select a memory first", severity="warning")
            return
        self.post_message(self.Requested(verb, memory))
