"""`attempt`, the one way a TUI worker runs backend work: a failure is shown once (its own way
when the worker says so), a bug's traceback is logged once, a poll's repeated failure is said
once, and cancellation is never swallowed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from assistant.errors import HintedError
from tui.workers import Failure, Repeats, attempt, attempt_async, succeeded


class FakeApp:
    """What `attempt` needs of the app: somewhere to notify."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def notify(self, message: str, **_: Any) -> None:
        self.notes.append(message)


def _boom() -> int:
    raise ValueError("boom")


def _traces(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "tui.workers" and r.exc_info]


async def test_a_bug_is_notified_in_one_line_and_its_traceback_logged_once(
        caplog: pytest.LogCaptureFixture) -> None:
    app = FakeApp()
    assert await attempt(app, "Listing folders", _boom) is None
    assert app.notes == ["Listing folders: ValueError: boom"]
    (trace,) = _traces(caplog)
    assert trace.exc_info is not None and trace.exc_info[0] is ValueError


async def test_a_hinted_error_is_its_message_and_hint_without_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    def refused() -> None:
        raise HintedError("Ollama is not running", "start it with `ollama serve`")

    app = FakeApp()
    assert not await succeeded(app, "Answering", refused)
    assert app.notes == ["Answering: Ollama is not running\nstart it with `ollama serve`"]
    assert not _traces(caplog)


async def test_shown_replaces_the_notification_and_may_be_awaitable() -> None:
    app = FakeApp()
    seen: list[Failure] = []

    async def in_the_answer(failed: Failure) -> None:
        await asyncio.sleep(0)
        seen.append(failed)

    async def ask() -> int:
        raise HintedError("model not found", "ollama pull it")

    assert await attempt_async(app, "Answering", ask, shown=in_the_answer) is None
    assert app.notes == []
    assert [(f.action, f.message, f.line) for f in seen] == [
        ("Answering", "model not found", "model not found (ollama pull it)")]


async def test_a_polls_repeated_failure_is_said_and_logged_once_until_it_recovers(
        caplog: pytest.LogCaptureFixture) -> None:
    app = FakeApp()
    repeats = Repeats()
    results = iter([_boom, _boom, lambda: 3, _boom])
    for _ in range(4):
        await attempt(app, "Reading the index", next(results), repeats=repeats)
    assert app.notes == ["Reading the index: ValueError: boom"] * 2  # before and after the success
    assert len(_traces(caplog)) == 2


async def test_the_result_comes_back_and_cancellation_propagates() -> None:
    app = FakeApp()
    assert await attempt(app, "Counting", lambda: 7) == 7

    async def hangs() -> None:
        await asyncio.Event().wait()

    task = asyncio.ensure_future(attempt_async(app, "Waiting", hangs))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert app.notes == []
