"""The second-brain terminal UI: the app keeps themes, keys, UI state and quitting.

The main screen (tui/screens/chat.py) owns the layout and routes to the controllers of
tui/controllers/, which run the backend's work off the event loop (tui/workers.py) and the chat
as an async worker on the loop itself. Nothing heavy is imported here, so the first frame
appears before torch or Chroma are even loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from textual import events
from textual.app import App
from textual.binding import BindingType
from textual.css.errors import StylesheetError

from assistant.context import AppContext
from assistant.daemon_pool import DaemonThreadPool
from assistant.logfile import install_log
from assistant.plain_text import plain
from tui.actions import app_bindings, validate_keymap
from tui.commands import ActionsProvider
from tui.controllers.extraction import Activity
from tui.protocols import Backend
from tui.screens.chat import ChatScreen, ScreenOptions
from tui.state import StateStore
from tui.themes import DEFAULT_THEME, load_themes

# Screens other than the main one are imported where they open: not needed for the first frame.

OLLAMA_POLL_SECONDS = 5.0
MEMORY_POLL_SECONDS = 3.0
THEME_CSS_KEY = ("theme-css", "")  # where the active theme's extra CSS sits in the stylesheet


class BrainApp(App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "second-brain"
    BINDINGS: ClassVar[list[BindingType]] = list(app_bindings())
    COMMANDS = App.COMMANDS | {ActionsProvider}
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        ctx: AppContext,
        backend: Backend,
        *,
        ollama_poll_seconds: float = OLLAMA_POLL_SECONDS,
        memory_poll_seconds: float = MEMORY_POLL_SECONDS,
        watch: bool | None = None,
        extract_idle_seconds: float | None = None,
    ) -> None:
        super().__init__()
        self.ctx = ctx
        self.backend = backend
        self.ui_state = StateStore(ctx.paths.ui_state_file,
                                   lambda text: self.notify(text, severity="warning"))
        self.activity = Activity()
        self.options = ScreenOptions(
            ollama_poll_seconds=ollama_poll_seconds,
            memory_poll_seconds=memory_poll_seconds,
            watch=ctx.config.indexing.watch if watch is None else watch,
            extract_idle_seconds=float(ctx.config.memory.extract_idle_seconds
                                       if extract_idle_seconds is None else extract_idle_seconds),
        )
        self._quitting = False
        self._chat_screen: ChatScreen | None = None
        self._startup_notes: list[str] = []
        self._load_themes()
        keymap, problems = validate_keymap(ctx.config.ui.keybindings)
        self._startup_notes += problems
        if keymap:
            self.set_keymap(keymap)

    def _load_themes(self) -> None:
        loaded = load_themes(self.ctx.paths.themes_dir)
        self._startup_notes += loaded.errors
        self.theme_names = loaded.names()
        self.theme_css = dict(loaded.css)
        for theme in loaded.themes:
            self.register_theme(theme)
        # Chosen before the first frame, so the stylesheet is built once with the right
        # theme instead of being refreshed for every widget right after mounting.
        wanted = self.ui_state.state.theme or self.ctx.config.ui.theme
        if wanted not in self.available_themes:
            self._startup_notes.append(f"theme {wanted!r} not found; using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME
        self.theme = wanted

    def get_default_screen(self) -> ChatScreen:
        self._chat_screen = ChatScreen(self.ctx, self.backend, self.ui_state, self.activity,
                                       self.options)
        return self._chat_screen

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        # Before the dialog opens, while the keys are still in order: what is typed as it
        # closes goes to the message box (ChatScreen.covered), never a pane's one-key commands.
        if self._chat_screen is not None and self.screen is self._chat_screen:
            self._chat_screen.covered()
        return super().push_screen(*args, **kwargs)

    @property
    def chat_screen(self) -> ChatScreen:
        """The main screen (also while a dialog is open on top of it)."""
        assert self._chat_screen is not None, "the app is not running"
        return self._chat_screen

    def on_mount(self) -> None:
        # The chat engine runs on this loop: its `run_in_executor(None, …)` calls (model
        # facts, waiting on Ollama) and Textual's thread workers go to daemon threads, so
        # quitting never waits for a call stuck in a network request.
        asyncio.get_running_loop().set_default_executor(
            DaemonThreadPool(8, thread_name_prefix="brain-ui"))
        for note in self._startup_notes:
            self.notify(note, severity="warning", timeout=10)

    def notify(
        self, message: str, *, title: str = "", severity: Any = "information",
        timeout: float | None = None, markup: bool = True,
    ) -> None:
        # Messages quote paths, config keys ("[ollama] host") and errors: never Rich markup.
        # Plain text too: they quote memories, titles and model errors.
        super().notify(plain(message), title=plain(title), severity=severity, timeout=timeout,
                       markup=False)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Paste | events.MouseDown):
            self.activity.touch()  # idle-time memory extraction counts from here
        await super().on_event(event)

    # --- themes -------------------------------------------------------------------------------

    def watch_theme(self, theme: str) -> None:
        self._apply_theme_css(theme)
        # `is_running`: a theme set before the app starts is the saved one (nothing to save).
        if self.is_running and theme != self.ui_state.state.theme:
            self.ui_state.update(theme=theme)

    def _apply_theme_css(self, theme: str) -> None:
        """Swap in the active theme's extra CSS (the `css` key of its TOML file)."""
        sheet = self.stylesheet
        had = sheet.source.pop(THEME_CSS_KEY, None) is not None
        css = self.theme_css.get(theme, "")
        if not css and not had:
            return
        if css:
            sheet.add_source(css, read_from=THEME_CSS_KEY, is_default_css=False)
        try:
            self.refresh_css(animate=False)
        except StylesheetError as exc:
            sheet.source.pop(THEME_CSS_KEY, None)
            self.theme_css.pop(theme, None)
            self.refresh_css(animate=False)
            self.notify(f"Theme {theme}: its css is invalid and was ignored: {exc}",
                        severity="warning", timeout=10)

    def action_next_theme(self) -> None:
        names = self.theme_names
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # --- quitting -----------------------------------------------------------------------------

    async def action_quit(self) -> None:
        if self._quitting:
            return
        self._quitting = True
        self.ui_state.update(theme=self.theme)  # the theme in effect, however it was chosen
        self.notify("Saving…", timeout=2)
        self.run_worker(self._finish_and_exit(), group="quit")

    async def _finish_and_exit(self) -> None:
        if self._chat_screen is not None:
            await self._chat_screen.shutdown()
        self.exit(0)

    @property
    def warming(self) -> bool:
        """Models are still loading (a load cannot be interrupted)."""
        return self._chat_screen is not None and self._chat_screen.status.warming.is_set()


def run_app(home: str | None = None) -> NoReturn:
    """Entry point for `brain` without a command; ends the process."""
    from tui.backend import CoreBackend

    ctx = AppContext.load(home)
    install_log(ctx.paths, "tui")
    backend = CoreBackend(ctx)
    app = BrainApp(ctx, backend)
    result = app.run()
    if not app.warming:
        # A model load cannot be interrupted, and closing the stores would wait for it.
        backend.close()
    _end_process(result or 0)


def _end_process(code: int) -> NoReturn:
    """End now, without the interpreter's finalization. Everything the user said is stored by
    now (the interrupted answer, the UI state; SQLite needs no close to stay consistent), while
    daemon threads may still be in a network call, a model load or an import: finalizing under
    them took seconds (a full garbage collection of the heap) and crashed one quit in ~20
    (SIGSEGV, measured under load). Flush what finalization would have."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
