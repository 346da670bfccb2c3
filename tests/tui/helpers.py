"""Test helpers for pilot tests: poll a condition with a deadline instead of sleeping."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.pilot import Pilot

from tests.waiting import wait_until_async

if TYPE_CHECKING:
    from tui.app import BrainApp
    from tui.screens.sessions import SessionsScreen


async def wait_until(
    pilot: Pilot, condition: Callable[[], object], *, timeout: float = 10.0, what: str = "",
    detail: Callable[[], str] | None = None,
) -> None:
    """Let the app run until `condition()` is true; fail with `what` (and the app's
    notifications: an error shown there is usually why; then `detail()`, the state the test
    knows is worth seeing) after `timeout` s."""

    def described() -> str:
        shown = f"notifications: {[n.message for n in pilot.app._notifications]}"
        return shown + (f"; {detail()}" if detail is not None else "")

    await wait_until_async(condition, timeout, what or str(condition),
                           step=lambda: pilot.pause(0.02), detail=described)


def answer_finished(app: BrainApp) -> bool:
    """The first assistant answer on screen exists and has finished streaming."""
    from tui.widgets.message import AnswerMessage

    answers = app.query(AnswerMessage)
    return bool(answers) and bool(answers.first().finished)


async def ask(pilot: Pilot, text: str) -> None:
    """Type `text` into the chat input and send it, as the user does."""
    from tui.widgets.chat_input import ChatInput

    chat_input = pilot.app.query_one(ChatInput)
    chat_input.focus()
    chat_input.load_text(text)
    await pilot.press("enter")


async def screen_ready(pilot: Pilot) -> None:
    """The main screen is composed (a snapshot's `run_before` may start before it is)."""
    from tui.widgets.chat_input import ChatInput

    await wait_until(pilot, lambda: pilot.app.screen.query(ChatInput), what="main screen")


async def open_sessions(pilot: Pilot) -> SessionsScreen:
    """F2, then wait until the sessions screen lists the stored sessions."""
    from tui.screens.sessions import SessionsScreen

    app = pilot.app
    await pilot.press("f2")
    await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen)
                     and app.screen.sessions, what="sessions listed")
    screen = app.screen
    assert isinstance(screen, SessionsScreen)
    return screen
