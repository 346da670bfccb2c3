"""The memory pane over the real store, with `brain` itself as the other process (issue 13).

`d` then `u` must restore exactly the memory deleted, whatever the cursor did in between, and
never touch another; the pane and the status line's count must follow every change, also one
made by `brain memory add/rm` while the TUI runs. Embeddings come from the fake Ollama
(`ollama:` model) in both processes, so they share one vector collection and start in a second.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from assistant.context import AppContext
from tests.e2e.conftest import Ran, run_brain, write_config
from tests.fake_ollama import FakeOllamaServer
from tests.tui.conftest import BrainTestApp
from tests.tui.helpers import wait_until
from tui.backend import CoreBackend
from tui.widgets.memory_pane import MemoryPane

SIZE = (140, 40)
FOUR = ("Prefers green tea", "Works at a bakery in Lyon", "Has a cat named Miso",
        "Plays the cello on Sundays")


@pytest.fixture
def core(home: Path, fake_ollama: FakeOllamaServer) -> Iterator[tuple[AppContext, CoreBackend]]:
    write_config(home, fake_ollama, embedding="ollama:nomic-embed-text")
    ctx = AppContext.load(str(home))
    backend = CoreBackend(ctx)
    try:
        yield ctx, backend
    finally:
        backend.close()


def make(core: tuple[AppContext, CoreBackend]) -> BrainTestApp:
    ctx, backend = core
    return BrainTestApp(ctx, backend, ollama_poll_seconds=0.5, memory_poll_seconds=0.1,
                        watch=False)


async def brain(home: Path, *args: str) -> Ran:
    """`brain ARGS…` in its own process, off the UI's loop (the app keeps running meanwhile)."""
    return (await asyncio.to_thread(run_brain, home, *args)).ok()


def remember(core: tuple[AppContext, CoreBackend], texts: tuple[str, ...]) -> None:
    """Store `texts` as facts, as `brain memory add` does."""
    for text in texts:
        core[1].memory.add(text, "fact")


async def show_all(pilot: Pilot[int], pane: MemoryPane, count: int) -> None:
    """Focus the memory pane (Ctrl+O), list every memory (a), wait for `count` rows."""
    await pilot.press("ctrl+o", "a")
    await wait_until(pilot, lambda: len(pane.items) == count, what=f"{count} listed")


def listed(ran: Ran) -> dict[str, str]:
    """`brain memory list --all --json` as text → status."""
    return {m["text"]: m["status"] for m in json.loads(ran.out)["memories"]}


async def test_delete_then_undo_restores_exactly_that_memory(core, home: Path) -> None:
    remember(core, FOUR)
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.chat_screen
        pane = app.query_one(MemoryPane)
        await show_all(pilot, pane, 4)
        await pilot.press("down", "down")
        victim = pane.selected()
        assert victim is not None
        await pilot.press("d")
        await wait_until(pilot, lambda: victim.id not in [i.memory.id for i in pane.items],
                         what="row removed")
        await wait_until(pilot, lambda: screen.status_bar.memories == 3, what="count 3")
        # The cursor now rests on another memory: `u` must not be about that one.
        await pilot.press("u")
        await wait_until(pilot, lambda: len(pane.items) == 4, what="row back")
        await wait_until(pilot, lambda: screen.status_bar.memories == 4, what="count 4")
        assert victim.id in [i.memory.id for i in pane.items]
        assert any("Undone: memory deleted" in m for m in app.notified)
    statuses = listed(await brain(home, "memory", "list", "--all", "--json"))
    assert statuses == dict.fromkeys(FOUR, "active")


async def test_undo_follows_the_changes_not_the_cursor(core) -> None:
    """Two deletes then two undos, the cursor moved each time: both come back, in reverse."""
    _ctx, backend = core
    remember(core, FOUR)
    store = backend.memory.store()
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(MemoryPane)
        await show_all(pilot, pane, 4)
        await pilot.press("d")
        await wait_until(pilot, lambda: len(pane.items) == 3)
        await pilot.press("down", "d", "up")
        await wait_until(pilot, lambda: len(pane.items) == 2)
        await pilot.press("u", "down", "u")  # pressed at once: applied one after the other
        await wait_until(pilot, lambda: len(pane.items) == 4, what="both rows back")
        await wait_until(pilot, lambda: store.count() == 4)
        # Nothing left to undo here: `u` says so and changes nothing.
        await pilot.press("u")
        await wait_until(pilot, lambda: any("Nothing to undo" in m for m in app.notified))
        assert store.count() == 4


async def test_undo_refuses_when_another_process_changed_that_memory(core, home: Path) -> None:
    _ctx, backend = core
    remember(core, FOUR)
    store = backend.memory.store()
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(MemoryPane)
        await show_all(pilot, pane, 4)
        victim = pane.selected()
        assert victim is not None
        await pilot.press("d")
        await wait_until(pilot, lambda: len(pane.items) == 3)
        await brain(home, "memory", "undo", victim.id)  # restored elsewhere meanwhile
        await wait_until(pilot, lambda: len(pane.items) == 4, what="restore seen by the poll")
        await pilot.press("u")
        await wait_until(pilot, lambda: any("nothing was undone" in m for m in app.notified))
        assert store.count() == 4
        assert store.get(victim.id).status.value == "active"


async def test_changes_by_another_process_appear_in_pane_and_count(core, home: Path) -> None:
    remember(core, FOUR[:2])
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.chat_screen
        pane = app.query_one(MemoryPane)
        await show_all(pilot, pane, 2)
        await wait_until(pilot, lambda: screen.status_bar.memories == 2, what="count 2")
        added = await brain(home, "memory", "add", "Speaks Portuguese at home")
        new_id = added.out.split()[0]
        await wait_until(pilot, lambda: any(i.memory.text == "Speaks Portuguese at home"
                                            for i in pane.items), what="added row shown")
        await wait_until(pilot, lambda: screen.status_bar.memories == 3, what="count 3")
        await brain(home, "memory", "rm", new_id)
        await wait_until(pilot, lambda: len(pane.items) == 2, what="removed row gone")
        await wait_until(pilot, lambda: screen.status_bar.memories == 2, what="count 2 again")
        await brain(home, "memory", "edit", pane.items[0].memory.id, "Prefers oolong tea")
        await wait_until(pilot, lambda: any(i.memory.text == "Prefers oolong tea"
                                            for i in pane.items), what="edited text shown")
