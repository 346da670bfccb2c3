"""The main screen: chat in the middle, sources and memories on the right, status below.

It owns the layout (pane visibility and sizes, kept in the UI state) and routes its widgets'
messages and the app's key actions to the controllers of tui/controllers/, which own the work.
Everything reaches the backend one way: `screen.backend`, typed by tui/protocols.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer

from assistant.config import Config
from assistant.context import AppContext
from assistant.sessions.turn import CONTINUE_MESSAGE
from tui.controllers.chat import ChatController
from tui.controllers.event_summaries import IdleEventSummaries
from tui.controllers.extraction import Activity
from tui.controllers.indexing import IndexingController
from tui.controllers.memory import MemoryController
from tui.controllers.status import StatusController
from tui.layout import CHAT_MIN_COLUMNS, Pane, PaneLayout, max_side_width, mode_for, pane_layout
from tui.protocols import Backend
from tui.state import StateStore
from tui.views import ConversationView
from tui.widgets.banner import Banner
from tui.widgets.chat_input import ChatInput
from tui.widgets.chat_view import ChatView
from tui.widgets.conversations_table import ConversationsTable
from tui.widgets.memory_pane import MemoryPane
from tui.widgets.message import AnswerMessage
from tui.widgets.sources_pane import SourcesPane
from tui.widgets.status_bar import StatusBar

SIDE_STEP = 4
SHARE_STEP = 5


@dataclass(frozen=True, slots=True)
class ScreenOptions:
    ollama_poll_seconds: float
    memory_poll_seconds: float
    watch: bool
    extract_idle_seconds: float


class ChatScreen(Screen[None]):
    def __init__(self, ctx: AppContext, backend: Backend, state: StateStore,
                 activity: Activity, options: ScreenOptions) -> None:
        super().__init__()
        self.ctx = ctx
        self.backend = backend
        self.state = state
        self.quitting = False
        # The settings running: the start's, plus what F5 applied live since (settings.py).
        self.running_config: Config = ctx.config
        self.banner = Banner(id="banner")
        self.chat_view = ChatView(id="chat")
        self.chat_input = ChatInput(id="input")
        self.chat_column = Vertical(id="chat-column")
        self.side = Vertical(id="side")
        self.drawer: Pane | None = None  # the side pane shown in place of the chat (collapsed)
        self.sources_pane = SourcesPane(id="sources")
        self.memory_pane = MemoryPane(id="memories")
        self.status_bar = StatusBar(id="status")
        self.chat = ChatController(
            self, session_id=state.state.last_session, model=ctx.config.chat_model,
            activity=activity, extract_idle_seconds=options.extract_idle_seconds,
        )
        self.memory = MemoryController(self, poll_seconds=options.memory_poll_seconds)
        self.event_summaries = IdleEventSummaries(
            self, activity, options.extract_idle_seconds,
            busy=lambda: self.chat.generating is not None)
        self.indexing = IndexingController(self, watch=options.watch)
        self.status = StatusController(self, ollama_poll_seconds=options.ollama_poll_seconds)

    def compose(self) -> ComposeResult:
        yield self.banner
        with Horizontal(id="main"):
            with self.chat_column:
                yield self.chat_view
                yield self.chat_input
            with self.side:
                yield self.sources_pane
                yield self.memory_pane
        yield self.status_bar
        yield Footer()

    def on_mount(self) -> None:
        self.apply_layout()
        self.status_bar.model = self.chat.model
        self.chat_input.focus()
        # Only after the first frame: background imports (torch, Chroma) hold the GIL for
        # seconds and would otherwise delay it.
        self.call_after_refresh(self._start)

    def _start(self) -> None:
        self.status.start()
        self.memory.start()
        self.chat.start()
        self.event_summaries.start()

    async def shutdown(self) -> None:
        """Quitting: stop syncing and watching, store the answer being written, let the chat
        finish its writes. Nothing to wait for when nothing was said while models load."""
        self.quitting = True
        self.indexing.stop()
        pending = self.chat_input.take_pending()
        if pending is not None:  # Enter came just before the quit: the question is kept
            await self.chat.submit(pending)
        if self.status.warming.is_set() and not self.chat.asked:
            return
        await self.chat.stop()

    def on_unmount(self) -> None:
        self.indexing.stop()  # however the app ends, the watcher thread must stop

    # --- layout ---------------------------------------------------------------------------------

    @property
    def layout_now(self) -> PaneLayout:
        """Where the panes go at the current width (tui/layout.py)."""
        return pane_layout(self.size.width, self.state.state, self.drawer)

    def on_resize(self, event: events.Resize) -> None:
        if mode_for(event.size.width) != "collapsed":
            self.drawer = None  # grown back: the panes are beside the chat again
        self.apply_layout()

    def apply_layout(self) -> None:
        layout = self.layout_now
        state = self.state.state
        self.chat_column.display = layout.show_chat
        self.side.display = layout.show_side
        self.side.styles.width = layout.side_width if layout.side_width else "1fr"
        self.side.set_class(layout.side_width is None, "-drawer")
        sources, memories = self.sources_pane, self.memory_pane
        sources.display = layout.show_sources
        memories.display = layout.show_memories
        if layout.show_sources and layout.show_memories:
            sources.styles.height = f"{state.sources_share}%"
        else:
            sources.styles.height = "1fr"
        memories.styles.height = "1fr"
        self.status_bar.hint = self._layout_hint(layout)

    def _layout_hint(self, layout: PaneLayout) -> str:
        if layout.mode != "collapsed":
            return ""
        if self.drawer is not None:
            return "Esc: chat"
        keys = [self.app_key("toggle_sources"), self.app_key("toggle_memories")]
        return f"{'/'.join(k for k in keys if k)} panes" if any(keys) else ""

    def app_key(self, action: str) -> str:
        """The key that runs `action`, as the footer shows it (config overrides included)."""
        from tui.actions import key_display

        return key_display(self.app, action)

    def _resize(self, **changes: object) -> None:
        self.state.update(**changes)
        self.apply_layout()

    def _open_drawer(self, pane: Pane | None) -> None:
        self.drawer = pane
        self.apply_layout()
        if pane is None:
            self.chat_input.focus()
        elif pane == "sources":
            self.sources_pane.table.focus()
        else:
            self.memory_pane.list_view.focus()

    def _toggle(self, pane: Pane) -> None:
        if self.layout_now.mode == "collapsed":
            self._open_drawer(None if self.drawer == pane else pane)
        elif pane == "sources":
            self._resize(show_sources=not self.state.state.show_sources)
        else:
            self._resize(show_memories=not self.state.state.show_memories)

    def action_toggle_sources(self) -> None:
        self._toggle("sources")

    def action_toggle_memories(self) -> None:
        self._toggle("memories")

    def _side_step(self, step: int) -> None:
        # From the width on screen: on a narrow terminal the stored width may not all fit.
        shown = self.layout_now.side_width or self.state.state.side_width
        wanted = min(shown + step, max_side_width(self.size.width))
        if wanted == shown and step > 0:
            self.notify(f"The chat keeps at least {CHAT_MIN_COLUMNS} columns.", timeout=3)
            return
        self._resize(side_width=wanted)

    def action_wider_side(self) -> None:
        self._side_step(SIDE_STEP)

    def action_narrower_side(self) -> None:
        self._side_step(-SIDE_STEP)

    def action_taller_sources(self) -> None:
        self._resize(sources_share=self.state.state.sources_share + SHARE_STEP)

    def action_shorter_sources(self) -> None:
        self._resize(sources_share=self.state.state.sources_share - SHARE_STEP)

    def action_focus_input(self) -> None:
        if self.drawer is not None:
            self._open_drawer(None)
        self.chat_input.focus()

    def show_pane(self, pane: Pane) -> None:
        """Make `pane` visible (opening the drawer when collapsed) before focusing it."""
        if self.layout_now.mode == "collapsed":
            if self.drawer != pane:
                self._open_drawer(pane)
        elif pane == "sources" and not self.state.state.show_sources:
            self._resize(show_sources=True)
        elif pane == "memories" and not self.state.state.show_memories:
            self._resize(show_memories=True)

    def action_focus_sources(self) -> None:
        self.show_pane("sources")
        self.sources_pane.table.focus()

    def action_focus_memories(self) -> None:
        self.show_pane("memories")
        self.memory_pane.list_view.focus()

    # --- dialogs --------------------------------------------------------------------------------

    def covered(self) -> None:
        """A dialog opens over this screen: when it closes, focus is back in the message box
        (the drawer shut, so the box is on screen). Set now, not on resume: the keys typed
        while the dialog closes arrive before the resume and go where focus is then.
        (Dialogs close on priority keys, handled as they arrive, for the same reason.)"""
        if self.drawer is not None:
            self._open_drawer(None)
        self.set_focus(self.chat_input, scroll_visible=False)

    def _modal_open(self) -> bool:
        return isinstance(self.app.screen, ModalScreen)

    def action_sessions(self) -> None:
        from pathlib import Path

        from tui.screens.sessions import SessionsScreen

        if self._modal_open():
            return

        def chosen(picked: str | ConversationView | None) -> None:
            if isinstance(picked, ConversationView):  # a search hit: open it at its turn
                self.chat.open_conversation(picked)
            elif picked and picked != self.chat.session_id:
                self.chat.resume(picked)

        self.app.push_screen(
            SessionsScreen(self.backend.sessions, self.chat.session_id, Path.home()), chosen
        )

    def action_events(self) -> None:
        from tui.screens.events import EventsScreen

        if not self._modal_open():
            self.app.push_screen(EventsScreen(self.backend.events))

    def action_index_manager(self) -> None:
        if not self._modal_open():
            self.indexing.open_manager()

    def action_models(self) -> None:
        if not self._modal_open():
            self.status.choose_model()

    def action_settings(self) -> None:
        from tui.screens.settings import SettingsScreen

        if not self._modal_open():
            def closed(config: Config | None) -> None:
                self.running_config = config or self.running_config

            self.app.push_screen(SettingsScreen(self.running_config, self.ctx.paths.config_file,
                                                self.backend.chat.configure), closed)

    def action_log(self) -> None:
        from assistant.logfile import log_file
        from tui.screens.log_view import LogScreen

        if not self._modal_open():
            self.app.push_screen(LogScreen(log_file(self.ctx.paths)))

    # --- chat -----------------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        text = self.chat_input.take_pending(event.text)
        if text is None:
            return  # already taken by a quit that came first
        await self.chat.submit(text)

    def action_cancel(self) -> None:
        if self.drawer is not None:  # Esc first closes the drawer the user is looking at
            self._open_drawer(None)
            return
        self.chat.cancel()

    async def action_new_session(self) -> None:
        await self.chat.new_session()

    async def action_continue_answer(self) -> None:
        """F9: the last answer was cut off at the cap — have the model go on from there (a
        turn "continue", sent with the cut answer marked as such in the history)."""
        answers = self.chat_view.answers
        if self.chat.generating is not None or not answers or not answers[-1].truncated:
            self.notify("Nothing to continue: the last answer was not cut off.",
                        severity="warning", timeout=3)
            return
        await self.chat.submit(CONTINUE_MESSAGE, typed=False)

    def action_copy_last(self) -> None:
        self.chat.copy_last()

    def action_rate_up(self) -> None:
        self.chat.rate_last(1)

    def action_rate_down(self) -> None:
        self.chat.rate_last(-1)

    async def on_answer_message_focused(self, event: AnswerMessage.Focused) -> None:
        await self.chat.show_context(event.answer)

    async def on_answer_message_citation_selected(
        self, event: AnswerMessage.CitationSelected
    ) -> None:
        await self.chat.cite(event.answer, event.number)

    def on_answer_message_rated(self, event: AnswerMessage.Rated) -> None:
        self.chat.rate(event.answer, event.rating)

    def on_sources_pane_marked_right(self, event: SourcesPane.MarkedRight) -> None:
        self.chat.mark_right(event.log_id, event.source)

    def on_sources_pane_chosen(self, event: SourcesPane.Chosen) -> None:
        self.chat.preview(event.source, self.indexing.search_query)

    def on_conversations_table_chosen(self, event: ConversationsTable.Chosen) -> None:
        self.chat.open_conversation(event.conversation)

    async def on_answer_message_recall_selected(
        self, event: AnswerMessage.RecallSelected
    ) -> None:
        await self.chat.recall_cited(event.answer, event.number)

    # --- search and indexing --------------------------------------------------------------------

    def action_search(self) -> None:
        self.indexing.search()

    def action_resync(self) -> None:
        self.indexing.start_sync(None, rebuild=False)

    # --- memories -------------------------------------------------------------------------------

    def on_memory_pane_requested(self, event: MemoryPane.Requested) -> None:
        self.memory.request(event.verb, event.memory)

    def on_memory_pane_mode_changed(self, event: MemoryPane.ModeChanged) -> None:
        self.memory.mode_changed(event.all_active, event.type_, event.query)

    def action_all_memories(self) -> None:
        self.show_pane("memories")
        self.memory_pane.action_toggle_all()

    def action_undo(self) -> None:
        self.memory.request("undo", None)

    def action_new_memory(self) -> None:
        self.memory.request("new", None)

    def action_forget_all(self) -> None:
        self.memory.request("forget_all", None)
