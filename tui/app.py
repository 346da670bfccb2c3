"""The second-brain terminal UI: chat in the middle, sources and memories on the right.

The app never does slow work on the event loop: the backend (tui/backend.py, over assistant/)
is only called from thread workers, which post typed messages (tui/messages.py) back. Nothing
heavy is imported here, so the first frame appears before torch or Chroma are even loaded.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.css.stylesheet import StylesheetError
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer

from assistant.context import AppContext
from assistant.errors import HintedError
from tui import messages as msg
from tui.actions import app_bindings, validate_keymap
from tui.commands import ActionsProvider
from tui.protocols import Backend
from tui.state import UiState, load_state, save_state
from tui.themes import DEFAULT_THEME, load_themes
from tui.views import (
    Failed,
    Finished,
    MemoryView,
    OllamaStatus,
    Retrieved,
    SyncProgress,
    Token,
)
from tui.widgets.banner import Banner
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_view import ChatView
from tui.widgets.memory_pane import MemoryPane
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane
from tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from tui.screens.index_manager import IndexManager
    from tui.screens.memory_editor import MemoryDraft

# Screens are imported where they open: they are not needed for the first frame.

OLLAMA_POLL_SECONDS = 5.0
MEMORY_POLL_SECONDS = 3.0
PROGRESS_EVERY_SECONDS = 0.1  # at most ~10 progress repaints a second while indexing
THEME_CSS_KEY = ("theme-css", "")  # where the active theme's extra CSS sits in the stylesheet
SIDE_STEP = 4
SHARE_STEP = 5


class SyncInterrupted(Exception):
    """Raised from the progress callback to stop a sync when the app quits."""


class BrainApp(App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "second-brain"
    BINDINGS: ClassVar[list[BindingType]] = app_bindings()  # type: ignore[assignment]
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
        self.ollama_poll_seconds = ollama_poll_seconds
        self.memory_poll_seconds = memory_poll_seconds
        self.watch_enabled = ctx.config.indexing.watch if watch is None else watch
        self.ui_state: UiState = load_state(ctx.paths.ui_state_file)
        self.model_name = ctx.config.ollama.model
        self.session_id: str | None = self.ui_state.last_session
        self.ollama_ok: bool | None = None
        self.model_ready = False
        self.generating: AnswerMessage | None = None
        self._cancel = threading.Event()
        self._stop_watch = threading.Event()
        self.warming = threading.Event()  # set while models load (cannot be interrupted)
        self._asked = False  # a question was sent in this run (memory extraction at exit)
        self._warned: tuple[str, ...] = ()  # retrieval warnings already shown as a toast
        self.extract_idle_seconds = float(
            ctx.config.memory.extract_idle_seconds
            if extract_idle_seconds is None else extract_idle_seconds
        )
        self._last_activity = time.monotonic()  # last user input or finished answer
        self._unextracted = 0  # answers in this run not through memory extraction yet
        self._extracting = False
        self._memory_stamp = ""
        self._search_query = ""
        self._startup_notes: list[str] = []
        loaded = load_themes(ctx.paths.themes_dir)
        self._startup_notes += loaded.errors
        self.theme_names = loaded.names()
        self.theme_css = dict(loaded.css)
        for theme in loaded.themes:
            self.register_theme(theme)
        keymap, problems = validate_keymap(ctx.config.ui.keybindings)
        self._startup_notes += problems
        if keymap:
            self.set_keymap(keymap)
        # Chosen before the first frame, so the stylesheet is built once with the right
        # theme instead of being refreshed for every widget right after mounting.
        wanted = self.ui_state.theme or ctx.config.ui.theme
        if wanted not in self.available_themes:
            self._startup_notes.append(f"theme {wanted!r} not found; using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME
        self.theme = wanted

    # --- layout -----------------------------------------------------------------------------

    async def _on_message(self, message: Message) -> None:
        # Workers may post after the screens are gone (quitting): nothing left to update.
        ours = type(message).__module__ == msg.__name__
        if ours and not self.screen_stack:
            return
        try:
            await super()._on_message(message)
        except NoMatches:
            if not ours:
                raise
            # The widget a worker reported to is gone (screen closed, app quitting).

    def notify(
        self, message: str, *, title: str = "", severity: Any = "information",
        timeout: float | None = None, markup: bool = True,
    ) -> None:
        # Messages quote paths, config keys ("[ollama] host") and errors: never Rich markup.
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    @property
    def main_screen(self) -> Screen[Any]:
        """The chat screen (App.query_one would search the modal on top instead)."""
        return self.screen_stack[0]

    @property
    def chat_view(self) -> ChatView:
        return self.main_screen.query_one(ChatView)

    @property
    def chat_input(self) -> ChatInput:
        return self.main_screen.query_one(ChatInput)

    @property
    def sources_pane(self) -> SourcesPane:
        return self.main_screen.query_one(SourcesPane)

    @property
    def memory_pane(self) -> MemoryPane:
        return self.main_screen.query_one(MemoryPane)

    @property
    def status_bar(self) -> StatusBar:
        return self.main_screen.query_one(StatusBar)

    @property
    def banner(self) -> Banner:
        return self.main_screen.query_one(Banner)

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield ChatView(id="chat")
                yield ChatInput(id="input")
            with Vertical(id="side"):
                yield SourcesPane(id="sources")
                yield MemoryPane(id="memories")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.apply_layout()
        status = self.status_bar
        status.model = self.model_name
        self.chat_input.focus()
        for note in self._startup_notes:
            self.notify(note, severity="warning", timeout=10)
        # Only after the first frame: background imports (torch, Chroma) hold the GIL for
        # seconds and would otherwise delay it.
        self.call_after_refresh(self._start_background)

    def _start_background(self) -> None:
        self.warm_up()
        self.check_ollama()
        self.set_interval(self.ollama_poll_seconds, self.check_ollama)
        self.set_interval(self.memory_poll_seconds, self.poll_memories)
        if self.extract_idle_seconds > 0:
            self.set_interval(max(0.05, min(self.extract_idle_seconds / 4, 5.0)),
                              self._check_idle)
        if self.session_id:
            self.resume_session(self.session_id)

    def apply_layout(self) -> None:
        state = self.ui_state
        side = self.main_screen.query_one("#side")
        side.styles.width = state.side_width
        sources = self.sources_pane
        memories = self.memory_pane
        sources.display = state.show_sources
        memories.display = state.show_memories
        side.display = state.show_sources or state.show_memories
        if state.show_sources and state.show_memories:
            sources.styles.height = f"{state.sources_share}%"
        else:
            sources.styles.height = "1fr"
        memories.styles.height = "1fr"

    def update_state(self, **changes: Any) -> None:
        self.ui_state = replace(self.ui_state, **changes).clamped()
        try:
            save_state(self.ctx.paths.ui_state_file, self.ui_state)
        except OSError as exc:
            self.notify(f"Cannot save the layout: {exc}", severity="warning")

    def watch_theme(self, theme: str) -> None:
        self._apply_theme_css(theme)
        if self.is_mounted and theme != self.ui_state.theme:
            self.update_state(theme=theme)

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

    # --- idle-time memory extraction ---------------------------------------------------------

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Paste | events.MouseDown):
            self._last_activity = time.monotonic()
        await super().on_event(event)

    def _check_idle(self) -> None:
        """After memory.extract_idle_seconds without input, extract memories from the answers
        not extracted yet, so facts are not held back until the next cadence or exit."""
        if (not self._unextracted or self._extracting or self.generating is not None
                or getattr(self, "_quitting", False)  # exit extraction takes over
                or time.monotonic() - self._last_activity < self.extract_idle_seconds):
            return
        self._extracting = True
        self._idle_extract(self._unextracted)

    @work(thread=True, group="extract")
    def _idle_extract(self, pending: int) -> None:
        extracted = self._guarded("Extracting memories", self.backend.chat.extract_pending)
        self.post_message(msg.IdleExtracted(pending, extracted or 0))

    def on_idle_extracted(self, message: msg.IdleExtracted) -> None:
        self._extracting = False
        # Failed extraction leaves the turns in the session: the next cadence or exit retries.
        self._unextracted = max(0, self._unextracted - message.pending)
        self._last_activity = time.monotonic()
        if message.extracted:
            self.poll_memories()  # new memories appear at once, highlighted
            self.refresh_stats()

    # --- startup and background checks ------------------------------------------------------

    def warm_up(self) -> None:
        # A daemon thread, not a Textual worker: those run on the event loop's executor,
        # which asyncio joins at exit, so quitting would wait for the model to finish loading.
        self.warming.set()
        threading.Thread(target=self._warm_up_thread, name="brain-warm-up", daemon=True).start()

    def _warm_up_thread(self) -> None:
        try:
            # The first answer should not pay for the Markdown widget's import (markdown-it).
            with contextlib.suppress(Exception):
                import textual.widgets._markdown  # noqa: F401
            self._warm_up()
        finally:
            self.warming.clear()

    def _warm_up(self) -> None:
        try:
            self.backend.knowledge.warm_up()
        except HintedError as exc:
            self.post_message(msg.ModelLoaded(error=str(exc)))
            return
        except Exception as exc:  # a broken model install must not kill the UI
            self.post_message(msg.ModelLoaded(error=f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(msg.ModelLoaded())
        # The first answer should not pay for the LLM client import and store opening;
        # a failure here is reported by that first turn instead.
        with contextlib.suppress(Exception):
            self.backend.chat.warm_up()

    def on_model_loaded(self, message: msg.ModelLoaded) -> None:
        status = self.status_bar
        if message.error:
            status.index = "index unavailable"
            self.notify(f"Cannot load the index: {message.error}", severity="error", timeout=15)
            return
        self.model_ready = True
        self.refresh_stats()
        if self.watch_enabled:
            self.watch_folders()

    @work(thread=True, exclusive=True, group="ollama")
    def check_ollama(self) -> None:
        try:
            status = self.backend.ollama.status(self.model_name)
        except Exception as exc:  # a broken client install: report, keep the app running
            status = OllamaStatus(False, message=f"cannot check Ollama: {exc}")
        self.post_message(msg.OllamaChecked(status))

    def on_ollama_checked(self, message: msg.OllamaChecked) -> None:
        status = message.status
        was = self.ollama_ok
        self.ollama_ok = status.ok
        self.banner.show_status(status, self.model_name)
        bar = self.status_bar
        bar.ollama = "up" if status.ok else ("no model" if status.model_missing else "down")
        if status.ok and was is False:
            self.notify("Ollama is back: chat is available again.")

    @work(thread=True, exclusive=True, group="stats")
    def refresh_stats(self) -> None:
        counts = self._guarded("Reading the index", lambda: (
            *self.backend.knowledge.stats(), self.backend.memory.count()
        ))
        if counts is not None:
            self.post_message(msg.StatsUpdated(*counts))

    def on_stats_updated(self, message: msg.StatsUpdated) -> None:
        bar = self.status_bar
        bar.set_index(message.files, message.chunks)
        bar.memories = message.memories

    def on_backend_error(self, message: msg.BackendError) -> None:
        text = f"{message.action}: {message.message}"
        if message.hint:
            text += f"\n{message.hint}"
        self.notify(text, severity="error", timeout=10)

    def _guarded(self, action: str, call: Callable[[], Any]) -> Any:
        """Run a backend call in a worker thread; report a failure instead of raising."""
        try:
            return call()
        except HintedError as exc:
            self.post_message(msg.BackendError(action, str(exc)))
        except Exception as exc:  # keep the UI alive; the message says what broke
            self.post_message(msg.BackendError(action, f"{type(exc).__name__}: {exc}"))
        return None

    # --- chat -------------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def ask(self, event: ChatInput.Submitted) -> None:
        if self.generating is not None:
            self.notify("An answer is still being written: wait, or press Esc to stop it.",
                        severity="warning")
            return
        chat_input = event.chat_input
        chat_input.remember(event.text)
        chat_input.clear()
        answer = await self.chat_view.add_exchange(event.text)
        answer.question = event.text
        self._asked = True
        self.generating = answer
        self._cancel = threading.Event()
        self.stream_answer(answer.id or "", event.text, self._cancel)

    @work(thread=True, group="chat")
    def stream_answer(self, answer_id: str, text: str, cancel: threading.Event) -> None:
        started = time.monotonic()
        finished = False
        try:
            for event in self.backend.chat.ask(
                self.session_id, text, model=self.model_name, cancel=cancel
            ):
                self.post_message(msg.ChatStreamEvent(answer_id, event))
                if isinstance(event, (Finished, Failed)):
                    finished = True
                    break
                if cancel.is_set():
                    break
        except HintedError as exc:
            self.post_message(msg.ChatStreamEvent(answer_id, Failed(str(exc))))
            return
        except Exception as exc:
            self.post_message(
                msg.ChatStreamEvent(answer_id, Failed(f"{type(exc).__name__}: {exc}"))
            )
            return
        if not finished:
            self.post_message(msg.ChatStreamEvent(answer_id, Finished(
                self.model_name, 0, time.monotonic() - started, interrupted=True,
            )))

    async def on_chat_stream_event(self, message: msg.ChatStreamEvent) -> None:
        try:
            answer = self.main_screen.query_one(f"#{message.answer_id}", AnswerMessage)
        except Exception:
            return  # the chat was cleared (new session) while streaming
        event = message.event
        if isinstance(event, Retrieved):
            answer.sources = event.sources
            answer.memories = event.memories
            answer.low_confidence = event.low_confidence
            answer.log_id = event.log_id
            answer.empty_index = event.empty_index
            self.show_retrieval_warnings(event.warnings)
            await self.show_answer_context(answer)
            if event.noted is not None:
                self.memory_pane.add_fresh([event.noted])
                self.notify(f"Remembered: {event.noted.text}", timeout=4)
                self.refresh_stats()
        elif isinstance(event, Token):
            if answer.finished:
                return
            await answer.append(event.text)
            chat = self.chat_view
            if chat.max_scroll_y - chat.scroll_y < 8:
                chat.scroll_end(animate=False)
        elif isinstance(event, Finished):
            if answer.finished:
                return
            await self.chat_view.finish(answer, event)
            self._unextracted += 1
            if event.session_id and event.session_id != self.session_id:
                self.session_id = event.session_id
                self.update_state(last_session=event.session_id)
            self._generation_over(answer)
            await self.show_answer_context(answer)
        elif isinstance(event, Failed):
            if answer.finished:
                return
            if event.partial and not answer.text:
                answer.text = event.partial
            error = event.message + (f" — {event.hint}" if event.hint else "")
            await self.chat_view.finish(answer, None, error=error)
            if event.session_id and event.session_id != self.session_id:
                # The failed turn is stored: the next question continues that session.
                self.session_id = event.session_id
                self.update_state(last_session=event.session_id)
            chat_input = self.chat_input
            if not chat_input.text.strip():
                chat_input.load_text(answer.question)  # nothing the user typed is lost
            self._generation_over(answer)
            self.notify(error, severity="error", timeout=10)
            self.check_ollama()

    def _generation_over(self, answer: AnswerMessage) -> None:
        if self.generating is answer:
            self.generating = None
        self._last_activity = time.monotonic()  # idle time counts from the answer's end
        self.refresh_stats()

    def action_cancel(self) -> None:
        if self.generating is None:
            return
        self._cancel.set()
        self.notify("Stopped.", timeout=2)

    async def show_answer_context(self, answer: AnswerMessage) -> None:
        index = self.chat_view.answers.index(answer) + 1 \
            if answer in self.chat_view.answers else 0
        caption = f"Answer {index}: {answer.question[:40]}"
        if answer.empty_index:
            caption = "Nothing is indexed yet: press F3 to add a folder"
        self.sources_pane.show(answer.sources, caption, low=answer.low_confidence)
        await self.memory_pane.show_used(answer.memories)

    async def on_answer_message_focused(self, event: AnswerMessage.Focused) -> None:
        await self.show_answer_context(event.answer)

    async def on_answer_message_citation_selected(
        self, event: AnswerMessage.CitationSelected
    ) -> None:
        from tui.screens.source_preview import SourcePreview

        await self.show_answer_context(event.answer)
        source = self.sources_pane.select(event.number)
        if source is None:
            self.notify(f"This answer has no source [{event.number}]", severity="warning")
            return
        self.push_screen(SourcePreview(source, event.answer.question))

    def on_source_chosen(self, event: msg.SourceChosen) -> None:
        from tui.screens.source_preview import SourcePreview

        query = self._search_query
        focused = [a for a in self.chat_view.answers if event.source in a.sources]
        if focused:
            query = focused[-1].question
        self.push_screen(SourcePreview(event.source, query))

    def on_answer_message_rated(self, event: AnswerMessage.Rated) -> None:
        self.rate(event.answer, event.rating)

    def rate(self, answer: AnswerMessage, rating: int) -> None:
        if answer.log_id is None:
            self.notify("This answer has no retrieval log entry to rate.", severity="warning")
            return
        log_id = answer.log_id

        def done(_: object) -> None:
            answer.rating = rating
            self.notify("Thanks: 👍 recorded" if rating > 0 else "Thanks: 👎 recorded "
                        "(`brain log --disliked` turns it into an eval case)")

        self.run_backend("Saving feedback",
                         lambda: self.backend.chat.feedback(log_id, rating), done)

    def _last_answer(self) -> AnswerMessage | None:
        answers = [a for a in self.chat_view.answers if a.finished]
        focused = self.focused
        if isinstance(focused, AnswerMessage) and focused.finished:
            return focused
        return answers[-1] if answers else None

    def action_rate_up(self) -> None:
        answer = self._last_answer()
        if answer:
            self.rate(answer, 1)

    def action_rate_down(self) -> None:
        answer = self._last_answer()
        if answer:
            self.rate(answer, -1)

    def action_copy_last(self) -> None:
        answer = self._last_answer()
        if answer is None:
            self.notify("No answer to copy yet.", severity="warning")
            return
        answer.action_copy()

    # --- a generic "run this backend call, then update the UI" worker -------------------------

    def run_backend(
        self, action: str, call: Callable[[], Any], then: Callable[[Any], Any] | None = None
    ) -> None:
        self._run_backend(action, call, then)

    @work(thread=True, group="backend")
    def _run_backend(
        self, action: str, call: Callable[[], Any], then: Callable[[Any], Any] | None
    ) -> None:
        sentinel = object()
        result: Any = sentinel
        try:
            result = call()
        except HintedError as exc:
            self.post_message(msg.BackendError(action, str(exc)))
        except Exception as exc:
            self.post_message(msg.BackendError(action, f"{type(exc).__name__}: {exc}"))
        if result is not sentinel and then is not None:
            self.call_from_thread(then, result)

    # --- search (works without Ollama) -----------------------------------------------------

    def action_search(self) -> None:
        text = self.chat_input.text.strip()
        if not text:
            self.notify("Type what to search for in the message box, then Ctrl+F.",
                        severity="warning")
            return
        self._search_query = text
        self.sources_pane.show((), f"Searching: {text[:40]}…")
        self.run_backend("Search", lambda: self.backend.knowledge.search(text),
                         lambda result: self.post_message(msg.SearchDone(result)))

    def on_search_done(self, message: msg.SearchDone) -> None:
        result = message.result
        pane = self.sources_pane
        if not pane.display:
            self.action_toggle_sources()
        pane.show(result.sources, f"Search: {result.query[:40]}", low=result.low_confidence)
        pane.table.focus()
        self.show_retrieval_warnings(result.warnings)

    def show_retrieval_warnings(self, warnings: tuple[str, ...]) -> None:
        """In the status line (it stays until the next activity) and once as a toast."""
        if not warnings:
            return
        self.status_bar.activity = f"⚠ {warnings[0]}"
        if warnings != self._warned:
            self._warned = warnings
            self.notify("\n".join(warnings), severity="warning", timeout=10)

    # --- memories ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="memory-list")
    def load_memories(self, type_: str | None = None, query: str = "") -> None:
        # Exclusive: while the user types a filter, only the latest listing is shown.
        memories = self._guarded(
            "Listing memories",
            lambda: self.backend.memory.list(all_active=True, type_=type_, query=query),
        )
        if memories is not None:
            self.post_message(msg.MemoriesLoaded(memories, all_active=True))

    async def on_memories_loaded(self, message: msg.MemoriesLoaded) -> None:
        await self.memory_pane.show(message.memories, all_active=message.all_active)

    def on_memory_pane_mode_changed(self, event: MemoryPane.ModeChanged) -> None:
        if event.all_active:
            self.load_memories(event.type_, event.query)

    def action_all_memories(self) -> None:
        pane = self.memory_pane
        if not pane.display:
            self.action_toggle_memories()
        pane.action_toggle_all()

    def action_new_memory(self) -> None:
        self.on_memory_pane_requested(MemoryPane.Requested("new", None))

    def action_forget_all(self) -> None:
        self.on_memory_pane_requested(MemoryPane.Requested("forget_all", None))

    def on_memory_pane_requested(self, event: MemoryPane.Requested) -> None:
        from tui.screens.confirm import ConfirmScreen
        from tui.screens.memory_editor import MemoryEditor
        from tui.screens.memory_history import MemoryHistory

        memory = event.memory
        api = self.backend.memory
        changed = self._memory_changed
        if event.verb == "edit" and memory is not None:
            def edited(draft: MemoryDraft | None) -> None:
                if draft is not None and draft.text != memory.text:
                    self.run_backend("Editing the memory", lambda: api.edit(memory.id, draft.text),
                                     lambda m: changed(memory.id, m, "edited"))

            self.push_screen(MemoryEditor(memory), edited)
        elif event.verb == "new":
            def added(draft: MemoryDraft | None) -> None:
                if draft is not None:
                    self.run_backend("Adding the memory", lambda: api.add(draft.text, draft.type),
                                     lambda m: changed(m.id, m, "added"))

            self.push_screen(MemoryEditor(None), added)
        elif event.verb == "delete" and memory is not None:
            self.run_backend("Deleting the memory", lambda: api.delete(memory.id),
                             lambda _: changed(memory.id, None, "deleted", memory))
        elif event.verb == "pin" and memory is not None:
            verb = "unpinned" if memory.pinned else "pinned"
            self.run_backend("Pinning the memory",
                             lambda: api.pin(memory.id, not memory.pinned),
                             lambda m: changed(memory.id, m, verb))
        elif event.verb == "undo" and memory is not None:
            self.run_backend("Undoing the last change", lambda: api.undo(memory.id),
                             lambda m: changed(memory.id, m, "restored"))
        elif event.verb == "history" and memory is not None:
            self.run_backend("Reading the history", lambda: api.history(memory.id),
                             lambda events: self.push_screen(MemoryHistory(memory, events)))
        elif event.verb == "forget_all":
            def confirmed(yes: bool | None) -> None:
                if yes:
                    self.run_backend("Forgetting everything", api.forget_all, self._forgot)

            self.push_screen(ConfirmScreen(
                "Forget everything?\nEvery memory, its history and its vectors are deleted "
                "for good. This cannot be undone.", yes="Forget everything", danger=True,
            ), confirmed)

    def _memory_changed(
        self, memory_id: str, memory: MemoryView | None, verb: str,
        before: MemoryView | None = None,
    ) -> None:
        pane = self.memory_pane
        pane.apply_change(memory_id, memory)
        if memory is None and before is not None:
            pane.last_touched = before
        hint = " (u to undo)" if verb in ("deleted", "edited") else ""
        self.notify(f"Memory {verb}{hint}", timeout=3)
        self.refresh_stats()

    async def _forgot(self, removed: int) -> None:
        pane = self.memory_pane
        pane.used = ()
        pane.last_touched = None
        await pane._fill([])
        self.notify(f"Forgot {removed} memories.")
        self.refresh_stats()

    @work(thread=True, exclusive=True, group="memory-poll")
    def poll_memories(self) -> None:
        try:
            fresh, stamp = self.backend.memory.changes_since(self._memory_stamp)
        except Exception:
            return  # the store may still be opening; next tick tries again
        first = not self._memory_stamp
        self._memory_stamp = stamp
        if fresh and not first:
            self.post_message(msg.MemoriesArrived(fresh))

    def on_memories_arrived(self, message: msg.MemoriesArrived) -> None:
        self.memory_pane.add_fresh(message.memories)
        count = len(message.memories)
        self.notify(f"Learned {count} new memor{'y' if count == 1 else 'ies'} "
                    "(Ctrl+R shows all)", timeout=4)
        self.refresh_stats()

    # --- indexing ----------------------------------------------------------------------------

    def refresh_folders(self) -> None:
        self.run_backend("Listing folders", self.backend.knowledge.folders,
                         lambda folders: self.post_message(msg.FoldersLoaded(folders)))

    def _index_manager(self) -> IndexManager | None:
        from tui.screens.index_manager import IndexManager

        for screen in self.screen_stack:
            if isinstance(screen, IndexManager):
                return screen
        return None

    def on_folders_loaded(self, message: msg.FoldersLoaded) -> None:
        manager = self._index_manager()
        if manager is not None:
            manager.show_folders(message.folders)

    def add_folder(self, path: Path) -> None:
        def added(folder: Any) -> None:
            self.notify(f"Added {folder.path}; indexing it now.")
            self.refresh_folders()
            self.start_sync([folder.path], rebuild=False)

        self.run_backend("Adding the folder", lambda: self.backend.knowledge.add_folder(path),
                         added)

    def remove_folder(self, path: str) -> None:
        def removed(_: object) -> None:
            self.notify(f"Removed {path} from the index.")
            self.refresh_folders()
            self.refresh_stats()

        self.run_backend("Removing the folder",
                         lambda: self.backend.knowledge.remove_folder(path), removed)

    def action_resync(self) -> None:
        self.start_sync(None, rebuild=False)

    def start_sync(self, folders: list[str] | None, *, rebuild: bool) -> None:
        if any(w.group == "sync" and w.is_running for w in self.workers):
            self.notify("Indexing is already running.", severity="warning")
            return
        self.sync_worker(folders, rebuild)

    @work(thread=True, group="sync")
    def sync_worker(self, folders: list[str] | None, rebuild: bool) -> None:
        label = "Rebuilding the index" if rebuild else (
            f"Indexing {Path(folders[0]).name}" if folders and len(folders) == 1
            else "Syncing all folders"
        )
        self.post_message(msg.SyncStarted(label))
        last = 0.0

        def progress(p: SyncProgress) -> None:
            nonlocal last
            if self._stop_watch.is_set():
                raise SyncInterrupted  # quitting: the sync is crash-safe, stop it now
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY_SECONDS or p.done >= p.total:
                last = now
                self.post_message(msg.SyncAdvanced(p))

        try:
            summary = self.backend.knowledge.sync(folders, rebuild=rebuild, progress=progress)
        except SyncInterrupted:
            return
        except HintedError as exc:
            self.post_message(msg.SyncFinished(None, str(exc)))
            return
        except Exception as exc:
            self.post_message(msg.SyncFinished(None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(msg.SyncFinished(summary))

    def on_sync_started(self, message: msg.SyncStarted) -> None:
        self.status_bar.activity = f"{message.label}…"
        manager = self._index_manager()
        if manager is not None:
            manager.sync_started(message.label)

    def on_sync_advanced(self, message: msg.SyncAdvanced) -> None:
        p = message.progress
        self.status_bar.activity = f"indexing {p.done}/{p.total}"
        manager = self._index_manager()
        if manager is not None:
            manager.sync_advanced(p)

    def on_sync_finished(self, message: msg.SyncFinished) -> None:
        bar = self.status_bar
        summary = message.summary
        if summary is None:
            bar.activity = "sync failed"
            self.notify(f"Indexing failed: {message.error}", severity="error", timeout=10)
        else:
            bar.activity = (f"synced: +{summary.added} ~{summary.updated} -{summary.removed}"
                            + (f", {len(summary.skipped)} skipped" if summary.skipped else ""))
        manager = self._index_manager()
        if manager is not None:
            manager.sync_finished(summary, message.error)
        self.refresh_folders()
        self.refresh_stats()

    @work(thread=True, exclusive=True, group="watch")
    def watch_folders(self) -> None:
        def changed(text: str) -> None:
            self.post_message(msg.WatchEvent(text))
            self.refresh_stats()

        try:
            self.backend.knowledge.watch(changed, self._stop_watch)
        except HintedError as exc:
            self.post_message(msg.WatchEvent(f"watch off: {exc}"))
        except Exception as exc:
            self.post_message(msg.WatchEvent(f"watch off: {type(exc).__name__}"))

    def on_watch_event(self, message: msg.WatchEvent) -> None:
        self.status_bar.activity = message.text

    # --- sessions ---------------------------------------------------------------------------

    async def action_new_session(self) -> None:
        if self.generating is not None:
            self._cancel.set()
        self.session_id = None
        self.update_state(last_session=None)
        await self.chat_view.clear()
        self.sources_pane.show((), "New session")
        await self.memory_pane.show_used(())
        self.chat_input.focus()

    def resume_session(self, session_id: str) -> None:
        async def show(turns: Any) -> None:
            self.session_id = session_id
            self.update_state(last_session=session_id)
            await self.chat_view.load_turns(turns)
            answers = self.chat_view.answers
            if answers:
                await self.show_answer_context(answers[-1])

        def load() -> Any:
            try:
                return self.backend.sessions.turns(session_id)
            except HintedError:
                # Deleted elsewhere (e.g. `brain sessions rm`): start fresh instead.
                self.call_from_thread(self._forget_session, session_id)
                raise

        self.run_backend("Opening the session", load, show)

    def _forget_session(self, session_id: str) -> None:
        if self.session_id == session_id:
            self.session_id = None
        if self.ui_state.last_session == session_id:
            self.update_state(last_session=None)

    # --- screens ------------------------------------------------------------------------------

    def _modal_open(self) -> bool:
        return isinstance(self.screen, ModalScreen)

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_sessions(self) -> None:
        from tui.screens.sessions import SessionsScreen

        if self._modal_open():
            return

        def chosen(session_id: str | None) -> None:
            if session_id and session_id != self.session_id:
                self.resume_session(session_id)

        self.push_screen(
            SessionsScreen(self.backend.sessions, self.session_id, Path.home()), chosen
        )

    def action_index_manager(self) -> None:
        from tui.screens.index_manager import IndexManager

        if not self._modal_open():
            self.push_screen(IndexManager())

    def action_models(self) -> None:
        from tui.screens.model_picker import ModelPicker

        if self._modal_open():
            return

        def chosen(name: str | None) -> None:
            if name:
                self.model_name = name
                self.status_bar.model = name
                self.notify(f"Chat model: {name} (this session continues)")
                self.check_ollama()

        self.push_screen(ModelPicker(self.backend.ollama, self.model_name), chosen)

    def action_settings(self) -> None:
        from tui.screens.settings import SettingsScreen

        if not self._modal_open():
            self.push_screen(SettingsScreen(self.ctx.config, str(self.ctx.paths.config_file)))

    def action_toggle_sources(self) -> None:
        self.update_state(show_sources=not self.ui_state.show_sources)
        self.apply_layout()

    def action_toggle_memories(self) -> None:
        self.update_state(show_memories=not self.ui_state.show_memories)
        self.apply_layout()

    def action_wider_side(self) -> None:
        self.update_state(side_width=self.ui_state.side_width + SIDE_STEP)
        self.apply_layout()

    def action_narrower_side(self) -> None:
        self.update_state(side_width=self.ui_state.side_width - SIDE_STEP)
        self.apply_layout()

    def action_taller_sources(self) -> None:
        self.update_state(sources_share=self.ui_state.sources_share + SHARE_STEP)
        self.apply_layout()

    def action_shorter_sources(self) -> None:
        self.update_state(sources_share=self.ui_state.sources_share - SHARE_STEP)
        self.apply_layout()

    def action_next_theme(self) -> None:
        names = self.theme_names
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"Theme: {self.theme}", timeout=2)

    def action_focus_input(self) -> None:
        self.chat_input.focus()

    def action_focus_sources(self) -> None:
        if not self.ui_state.show_sources:
            self.action_toggle_sources()
        self.sources_pane.table.focus()

    def action_focus_memories(self) -> None:
        if not self.ui_state.show_memories:
            self.action_toggle_memories()
        self.memory_pane.list_view.focus()

    # --- quitting -----------------------------------------------------------------------------

    async def action_quit(self) -> None:
        if getattr(self, "_quitting", False):
            return
        self._quitting = True
        self._cancel.set()
        self._stop_watch.set()
        self.update_state()
        self.notify("Saving…", timeout=2)
        self._finish_and_exit()

    def on_unmount(self) -> None:
        # However the app ends, background threads must stop or the process cannot exit.
        self._stop_watch.set()
        self._cancel.set()

    @work(thread=True, group="quit")
    def _finish_and_exit(self) -> None:
        if self.warming.is_set() and not self._asked:
            # Nothing was said yet, so nothing to extract; do not wait for the model load.
            self.call_from_thread(self.exit, 0)
            return
        try:
            self.backend.chat.close()  # memory extraction and session writes finish first
        except Exception as exc:
            self.call_from_thread(self.notify, f"Could not finish saving: {exc}",
                                  severity="error")
        self.call_from_thread(self.exit, 0)


def run_app(home: str | None = None) -> int:
    """Entry point for `brain` without a command."""
    from tui.backend import CoreBackend

    ctx = AppContext.load(home)
    backend = CoreBackend(ctx)
    app = BrainApp(ctx, backend)
    result = app.run()
    if app.warming.is_set():
        # Quit while the embedding model was still loading: a model load cannot be
        # interrupted, and closing the stores or exiting normally would wait for it. The
        # session and memories are saved by now; SQLite needs no close to stay consistent.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(result or 0)
    backend.close()
    return result or 0
