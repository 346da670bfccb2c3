"""The main screen: chat in the middle, sources and memories on the right, status below.

It owns the layout (pane visibility and sizes, kept in the UI state) and routes its widgets'
messages and the app's key actions to the controllers of tui/controllers/, which own the work.
Everything reaches the backend one way: `screen.backend`, typed by tui/protocols.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer

from assistant.context import AppContext
from tui.controllers.chat import Activity, ChatController
from tui.controllers.indexing import IndexingController
from tui.controllers.memory import MemoryController
from tui.controllers.status import StatusController
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
        self.banner = Banner(id="banner")
        self.chat_view = ChatView(id="chat")
        self.chat_input = ChatInput(id="input")
        self.side = Vertical(id="side")
        self.sources_pane = SourcesPane(id="sources")
        self.memory_pane = MemoryPane(id="memories")
        self.status_bar = StatusBar(id="status")
        self.chat = ChatController(
            self, session_id=state.state.last_session, model=ctx.config.ollama.model,
            activity=activity, extract_idle_seconds=options.extract_idle_seconds,
        )
        self.memory = MemoryController(self, poll_seconds=options.memory_poll_seconds)
        self.indexing = IndexingController(self, watch=options.watch)
        self.status = StatusController(self, ollama_poll_seconds=options.ollama_poll_seconds)

    def compose(self) -> ComposeResult:
        yield self.banner
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
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

    async def shutdown(self) -> None:
        """Quitting: stop syncing and watching, store the answer being written, let the chat
        finish its writes. Nothing to wait for when nothing was said while models load."""
        self.quitting = True
        self.indexing.stop()
        if self.status.warming.is_set() and not self.chat.asked:
            return
        await self.chat.stop()

    def on_unmount(self) -> None:
        self.indexing.stop()  # however the app ends, the watcher thread must stop

    # --- layout ---------------------------------------------------------------------------------

    def apply_layout(self) -> None:
        state = self.state.state
        self.side.styles.width = state.side_width
        sources, memories = self.sources_pane, self.memory_pane
        sources.display = state.show_sources
        memories.display = state.show_memories
        self.side.display = state.show_sources or state.show_memories
        if state.show_sources and state.show_memories:
            sources.styles.height = f"{state.sources_share}%"
        else:
            sources.styles.height = "1fr"
        memories.styles.height = "1fr"

    def _resize(self, **changes: object) -> None:
        self.state.update(**changes)
        self.apply_layout()

    def action_toggle_sources(self) -> None:
        self._resize(show_sources=not self.state.state.show_sources)

    def action_toggle_memories(self) -> None:
        self._resize(show_memories=not self.state.state.show_memories)

    def action_wider_side(self) -> None:
        self._resize(side_width=self.state.state.side_width + SIDE_STEP)

    def action_narrower_side(self) -> None:
        self._resize(side_width=self.state.state.side_width - SIDE_STEP)

    def action_taller_sources(self) -> None:
        self._resize(sources_share=self.state.state.sources_share + SHARE_STEP)

    def action_shorter_sources(self) -> None:
        self._resize(sources_share=self.state.state.sources_share - SHARE_STEP)

    def action_focus_input(self) -> None:
        self.chat_input.focus()

    def action_focus_sources(self) -> None:
        if not self.state.state.show_sources:
            self.action_toggle_sources()
        self.sources_pane.table.focus()

    def action_focus_memories(self) -> None:
        if not self.state.state.show_memories:
            self.action_toggle_memories()
        self.memory_pane.list_view.focus()

    # --- dialogs --------------------------------------------------------------------------------

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

    def action_index_manager(self) -> None:
        if not self._modal_open():
            self.indexing.open_manager()

    def action_models(self) -> None:
        if not self._modal_open():
            self.status.choose_model()

    def action_settings(self) -> None:
        from tui.screens.settings import SettingsScreen

        if not self._modal_open():
            self.app.push_screen(
                SettingsScreen(self.ctx.config, str(self.ctx.paths.config_file)))

    # --- chat -----------------------------------------------------------------------------------

    @on(ChatInput.Submitted)
    async def _submitted(self, event: ChatInput.Submitted) -> None:
        await self.chat.submit(event.text)

    def action_cancel(self) -> None:
        self.chat.cancel()

    async def action_new_session(self) -> None:
        await self.chat.new_session()

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
        if not self.memory_pane.display:
            self.action_toggle_memories()
        self.memory_pane.action_toggle_all()

    def action_new_memory(self) -> None:
        self.memory.request("new", None)

    def action_forget_all(self) -> None:
        self.memory.request("forget_all", None)
