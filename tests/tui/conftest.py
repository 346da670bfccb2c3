"""Fixtures for the TUI tests: an isolated context, a BrainApp over the fake backend, the real
core over the fake Ollama server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.context import AppContext
from tests.fakes import HashEmbedder
from tests.tui.fake_backend import FakeBackend
from tui.app import BrainApp
from tui.backend import CoreBackend


class BrainTestApp(BrainApp):
    """BrainApp with blinking cursors off, so snapshots are deterministic."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notified: list[str] = []

    def notify(
        self, message: str, *, title: str = "", severity: Any = "information",
        timeout: float | None = None, markup: bool = True,
    ) -> None:
        """Every notification raised, kept for the tests: `_notifications` drops one once its
        timeout has passed (3 s for "Opened … at turn 1"), and under load that can be before
        the test's next poll, which then waits for a state already gone."""
        self.notified.append(message)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def on_mount(self) -> None:
        super().on_mount()
        self._no_blink()

    def _no_blink(self) -> None:
        # The main screen's widgets exist before it is composed (it builds them first).
        self.chat_screen.chat_input.cursor_blink = False

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        result = super().push_screen(*args, **kwargs)
        def no_blink() -> None:
            for widget in self.screen.query("Input, TextArea"):
                setattr(widget, "cursor_blink", False)  # noqa: B010 (Input, TextArea: no common type)
        self.call_after_refresh(no_blink)
        return result


@pytest.fixture
def ctx(home: Path) -> AppContext:
    return AppContext.load(str(home))


@pytest.fixture
def core(ollama_home: Path) -> Iterator[tuple[AppContext, CoreBackend]]:
    """The real core (SQLite, Chroma, the memory store, the fake Ollama server) with the fast
    HashEmbedder, for tests of the app over it."""
    ctx = AppContext.load(str(ollama_home))
    ctx._embedder = HashEmbedder()
    backend = CoreBackend(ctx)
    try:
        yield ctx, backend
    finally:
        backend.close()


@pytest.fixture
def backend() -> FakeBackend:
    return FakeBackend()


@pytest.fixture
def make_app(ctx: AppContext, backend: FakeBackend) -> Callable[..., BrainTestApp]:
    def make(**kwargs: Any) -> BrainTestApp:
        kwargs.setdefault("ollama_poll_seconds", 0.5)
        kwargs.setdefault("memory_poll_seconds", 0.5)
        kwargs.setdefault("watch", False)
        return BrainTestApp(ctx, backend, **kwargs)

    return make
