"""The chat engine's session-store calls never run on the event loop: another process holding
the database's write lock (a `brain sessions import`) makes a write wait up to SQLite's busy
timeout, and the UI's loop must keep running meanwhile (issue 24 item 2)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from assistant.chat.events import Done
from tests.fixtures.chat import ChatRig

PATIENCE = 30.0  # seconds a state may take to come on a loaded machine


class Heartbeat:
    """Counts the loop's turns: it only beats while nothing blocks the loop."""

    def __init__(self) -> None:
        self.beats = 0
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.beats += 1
            await asyncio.sleep(0.005)

    def stop(self) -> None:
        self._task.cancel()


class Gate:
    """Wraps a blocking store method: tells when a call is inside it and when it returned."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.entered = threading.Event()
        self.returned = threading.Event()
        self._method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        try:
            return self._method(*args, **kwargs)
        finally:
            self.returned.set()

    @property
    def blocked(self) -> bool:
        return self.entered.is_set() and not self.returned.is_set()


@contextmanager
def write_lock(path: Path | str) -> Iterator[None]:
    """Another connection holds the database's write lock (as an import in another process
    does) until the block ends."""
    holder = sqlite3.connect(str(path), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("COMMIT")
        holder.close()


async def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def beats_while_blocked(heart: Heartbeat, gate: Gate) -> None:
    """The loop beats several times while the store call is still waiting on the lock."""
    await until(lambda: gate.entered.is_set(), "the store call")
    start = heart.beats
    await until(lambda: heart.beats >= start + 5 or not gate.blocked, "heartbeats")
    assert gate.blocked, "the store call ran on the loop: no heartbeat while it waited"


async def test_a_turn_is_stored_off_the_loop_while_another_process_holds_the_lock(
        chat_rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = chat_rig.make()
    chat_rig.fake.script_chat("first answer")
    assert isinstance(await engine.ask("first"), Done)  # the session exists: only the turn
    await engine.drain(timeout=PATIENCE)  # is written below
    gate = Gate(chat_rig.store.add_turn)
    monkeypatch.setattr(chat_rig.store, "add_turn", gate)
    heart = Heartbeat()
    chat_rig.fake.script_chat("second answer")
    with write_lock(chat_rig.store.path):
        stream = engine.send("second")
        await beats_while_blocked(heart, gate)
        assert not stream.done
    final = await stream.result()
    heart.stop()
    assert isinstance(final, Done) and final.turn.status == "complete"
    assert [t.answer for t in engine.turns()] == ["first answer", "second answer"]


async def test_extraction_saves_its_progress_off_the_loop(
        chat_rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = chat_rig.make(extract_every_turns=0)
    chat_rig.fake.script_chat("noted")
    assert isinstance(await engine.ask("I live in Lisbon."), Done)
    await engine.drain(timeout=PATIENCE)
    gate = Gate(chat_rig.store.set_extracted)
    monkeypatch.setattr(chat_rig.store, "set_extracted", gate)
    heart = Heartbeat()
    with write_lock(chat_rig.store.path):
        extracting = asyncio.get_running_loop().create_task(
            engine.extract_pending(timeout=PATIENCE))
        await beats_while_blocked(heart, gate)
        assert not extracting.done()
    assert await extracting == 1
    heart.stop()
    session = engine.session
    assert session is not None and session.extracted_through == 1


async def test_retry_replaces_the_failed_turn_off_the_loop(
        chat_rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    from assistant.llm.errors import ChatError

    engine = chat_rig.make()
    chat_rig.fake.stop()
    assert not isinstance(await engine.ask("hello?"), Done)  # stored as failed
    await engine.drain(timeout=PATIENCE)
    chat_rig.fake.start()
    gate = Gate(chat_rig.store.delete_turn)
    monkeypatch.setattr(chat_rig.store, "delete_turn", gate)
    heart = Heartbeat()
    chat_rig.fake.script_chat("Hi!")
    with write_lock(chat_rig.store.path):
        retrying = asyncio.get_running_loop().create_task(engine.retry())
        await beats_while_blocked(heart, gate)
        with pytest.raises(ChatError, match="still being written"):
            engine.send("meanwhile")  # the retry holds the engine as a turn does
    final = await (await retrying).result()
    heart.stop()
    assert isinstance(final, Done) and final.turn.status == "complete"
    assert [(t.question, t.status) for t in engine.turns()] == [("hello?", "complete")]
