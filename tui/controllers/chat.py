"""Chat: send a question, stream the answer, stop it, rate it; sessions.

A turn is one async worker on the UI's own loop (see tui/backend/chat.py): it awaits the
backend's turn and shows each event as it comes. Before the first token — minutes on a CPU while
Ollama loads the model and reads the prompt — the answer's placeholder and the status line say
what Ollama is doing, with the seconds. The model's reasoning goes to the answer's collapsed
thinking block, never into its text. Esc cancels the turn itself in any phase (loading, reading,
thinking, answering), so the model stops at once and the turn ends with `Finished(interrupted)`;
the engine stores it with the partial answer. Quitting does the same and waits for that store
(never for memory extraction: the turns it has not read wait for the next idle moment, in this
run or the next).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from textual.worker import Worker

from assistant.chat.answer_notes import NONE_CITED
from assistant.errors import HintedError
from tui.controllers.extraction import Activity, IdleExtraction
from tui.protocols import ChatTurn
from tui.views import (
    ChatEvent,
    ConversationView,
    Failed,
    Finished,
    Replaced,
    Retrieved,
    SourceView,
    Thinking,
    Token,
    TurnView,
    Waiting,
)
from tui.widgets.message import AnswerMessage
from tui.workers import Failure, attempt, attempt_async, notify, succeeded

if TYPE_CHECKING:
    from tui.screens.chat import ChatScreen

SCROLL_FOLLOW_LINES = 8  # keep following the answer while the view is this close to the end
STOP_TIMEOUT = 5.0  # seconds a quit waits for the interrupted turn to be stored


class ChatController:
    def __init__(self, screen: ChatScreen, *, session_id: str | None, model: str,
                 activity: Activity, extract_idle_seconds: float) -> None:
        self.screen = screen
        self.session_id = session_id
        self.model = model
        self.activity = activity
        self.generating: AnswerMessage | None = None
        self.asked = False  # a question was sent in this run (quitting then stores its turn)
        self._turn: ChatTurn | None = None
        self._worker: Worker[None] | None = None
        self._stop_requested = False
        # Set while a question is being put on screen, before its worker exists: a quit then
        # waits for the worker, so the turn is stored (not lost with the screen).
        self._starting: asyncio.Event | None = None
        self.extraction = IdleExtraction(screen, activity, extract_idle_seconds,
                                         busy=lambda: self.generating is not None)

    def start(self) -> None:
        self.extraction.start()
        if self.session_id:
            self.resume(self.session_id)

    # --- a turn ---------------------------------------------------------------------------

    async def submit(self, text: str, *, typed: bool = True) -> None:
        """Send `text`: `typed` in the message box, or by a key (F9) that leaves the box be."""
        screen = self.screen
        if self.generating is not None:
            screen.notify("An answer is still being written: wait, or press Esc to stop it.",
                          severity="warning")
            return
        self.asked = True
        self._stop_requested = False
        starting = self._starting = asyncio.Event()
        try:
            if typed:
                screen.chat_input.remember(text)
                screen.chat_input.clear()
            answer = await screen.chat_view.add_exchange(text)
            answer.question = text
            self.generating = answer
            self._worker = screen.run_worker(self._answer(answer, text), group="chat")
        finally:
            self._starting = None
            starting.set()

    async def _answer(self, answer: AnswerMessage, text: str) -> None:
        # Ollama down before the first event, or a bug: shown in the answer itself.
        await attempt_async(self.screen.app, "Answering", lambda: self._stream(answer, text),
                            shown=lambda f: self._show(answer, Failed(f.message, f.hint)))
        if not answer.finished:  # the stream ended without its final event
            await self._show(answer, Finished(self.model, 0, 0.0, interrupted=True))

    async def _stream(self, answer: AnswerMessage, text: str) -> None:
        turn: ChatTurn | None = None
        try:
            turn = await self.screen.backend.chat.ask(self.session_id, text, model=self.model)
            self._turn = turn
            if self._stop_requested:
                turn.cancel()
            async for event in turn:
                await self._show(answer, event)
        except asyncio.CancelledError:
            if turn is not None:
                turn.cancel()  # the engine stores the turn as interrupted
            raise
        finally:
            self._turn = None

    def cancel(self) -> None:
        """Esc: stop the answer being written (kept as interrupted, with its text)."""
        if self.generating is None:
            return
        self._stop_requested = True
        if self._turn is not None:
            self._turn.cancel()
        self.screen.notify("Stopped.", timeout=2)

    async def _show(self, answer: AnswerMessage, event: ChatEvent) -> None:
        if self.screen.quitting:
            return  # the screen is going away: only the engine's store matters now
        if isinstance(event, Retrieved):
            await self._retrieved(answer, event)
        elif answer.finished:
            return
        elif isinstance(event, Waiting):
            answer.waiting(event.text)
            self.screen.status_bar.model_activity = event.text
        elif isinstance(event, Thinking):
            self.screen.status_bar.model_activity = ""
            await answer.think(event.text)
            self._follow()
        elif isinstance(event, Token):
            self.screen.status_bar.model_activity = ""
            await self._token(answer, event)
        elif isinstance(event, Replaced):
            self.screen.status_bar.model_activity = ""
            await answer.replace(event.text, event.thinking)
        elif isinstance(event, Finished):
            await self._finished(answer, event)
        else:
            await self._failed(answer, event)

    async def _retrieved(self, answer: AnswerMessage, event: Retrieved) -> None:
        screen = self.screen
        answer.set_status(f"asking {self.model}… · Esc stops")
        answer.sources = event.sources
        answer.memories = event.memories
        answer.conversations = event.conversations
        screen.status_bar.dates = event.time_range
        answer.low_confidence = event.low_confidence
        answer.log_id = event.log_id
        answer.empty_index = event.empty_index
        screen.status.show_warnings(event.warnings)
        answer.noted = event.noted is not None
        if event.noted is None:
            return await self.show_context(answer)
        await screen.memory_pane.add_fresh([event.noted], to_used=True)
        screen.memory.remember_change(event.noted, "added")
        screen.notify(f"Remembered: {event.noted.text}", timeout=4)
        screen.status.refresh_stats()

    async def _token(self, answer: AnswerMessage, event: Token) -> None:
        await answer.append(event.text)
        self._follow()

    def _follow(self) -> None:
        chat = self.screen.chat_view
        if chat.max_scroll_y - chat.scroll_y < SCROLL_FOLLOW_LINES:
            chat.scroll_end(animate=False)

    async def _finished(self, answer: AnswerMessage, event: Finished) -> None:
        if event.text:
            answer.text = event.text  # exactly what was stored
        if event.conversations:
            answer.conversations = event.conversations  # with those the answer cites, and
            # those a search_conversations call added
        await self.screen.chat_view.finish(answer, event)
        self.extraction.answered()
        self._continue_in(event.session_id)
        self._over(answer)
        if not answer.noted:  # (a note keeps the last real answer's sources in the panes)
            await self.show_context(answer)

    async def _failed(self, answer: AnswerMessage, event: Failed) -> None:
        screen = self.screen
        if event.partial and not answer.text:
            answer.text = event.partial
        error = event.message + (f" — {event.hint}" if event.hint else "")
        await screen.chat_view.finish(answer, None, error=error)
        await self.show_context(answer)  # (its caption: not answered)
        self._continue_in(event.session_id)  # the failed turn is stored: continue there
        if not screen.chat_input.text.strip():
            screen.chat_input.load_text(answer.question)  # nothing the user typed is lost
        self._over(answer)
        screen.notify(error, severity="error", timeout=10)
        screen.status.check_ollama()

    def _continue_in(self, session_id: str | None) -> None:
        if session_id and session_id != self.session_id:
            self.session_id = session_id
            self.screen.state.update(last_session=session_id)

    def _over(self, answer: AnswerMessage) -> None:
        if self.generating is answer:
            self.generating = None
            self.screen.status_bar.model_activity = ""
        self.activity.touch()  # idle time counts from the answer's end
        self.screen.status.refresh_stats()

    async def stop(self) -> None:
        """Quitting: stop the answer (the engine stores it as interrupted, with its partial
        text), then close the chat without running memory extraction (see ChatAdapter.close:
        the next idle moment, in the next run, does it)."""
        self._stop_requested = True  # a turn still starting is cancelled as soon as it exists
        starting = self._starting
        if starting is not None:  # the question is going on screen: its worker comes next
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(starting.wait(), STOP_TIMEOUT)
        if self._turn is not None:
            self._turn.cancel()
        worker = self._worker
        if worker is not None and not worker.is_finished:
            # The engine has stored the turn once the stream ended (it ends promptly).
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), STOP_TIMEOUT)
        await attempt_async(self.screen.app, "Could not finish saving",
                            self.screen.backend.chat.close)

    # --- the answer's context: sources, memories, rating, copy ---------------------------------

    async def show_context(self, answer: AnswerMessage) -> None:
        screen = self.screen
        answers = screen.chat_view.answers
        index = answers.index(answer) + 1 if answer in answers else 0
        caption = f"{'Question' if answer.failed else 'Answer'} {index}" + (
            ", not answered: " if answer.failed else ": ") + answer.question[:40]
        if answer.empty_index:
            caption = "Nothing is indexed yet: press F3 to add a folder"
        elif NONE_CITED in answer.notes:
            caption += f" — {NONE_CITED}"
        screen.sources_pane.show(answer.sources, caption, low=answer.low_confidence,
                                 log_id=answer.log_id)
        screen.sources_pane.show_conversations(answer.conversations)
        await screen.memory_pane.show_used(answer.memories)

    async def cite(self, answer: AnswerMessage, number: int) -> None:
        from tui.screens.source_preview import SourcePreview

        await self.show_context(answer)
        source = self.screen.sources_pane.select(number)
        if source is None:
            self.screen.notify(f"This answer has no source [{number}]", severity="warning")
            return
        self.screen.app.push_screen(SourcePreview(source, answer.question))

    async def recall_cited(self, answer: AnswerMessage, number: int) -> None:
        """[c<n>] clicked in an answer: show it in the sources pane, its row selected."""
        await self.show_context(answer)
        for row, view in enumerate(answer.conversations):
            if view.number == number:
                table = self.screen.sources_pane.recalled
                table.move_cursor(row=row)
                table.focus()
                return
        self.screen.notify(f"This answer has no earlier conversation [c{number}]",
                           severity="warning")

    def open_conversation(self, view: ConversationView) -> None:
        """Enter on an earlier conversation: open its session at that turn."""
        if view.deleted:
            self.screen.notify("That conversation was deleted.", severity="warning")
            return
        if self.generating is not None:
            self.screen.notify("An answer is still being written: wait, or press Esc to stop "
                               "it.", severity="warning")
            return
        self.screen.run_worker(self._open_conversation(view), group="session")

    async def _open_conversation(self, view: ConversationView) -> None:
        if view.session_id != self.session_id:
            await self._resume(view.session_id)
            if self.session_id != view.session_id:
                return  # could not be opened (reported)
        answers = self.screen.chat_view.answers
        if view.seq is not None and 0 < view.seq <= len(answers):  # shown, not focused
            answers[view.seq - 1].scroll_visible(animate=False, top=True)
            await self.show_context(answers[view.seq - 1])
        self.screen.chat_input.focus()
        self.screen.notify(f"Opened {view.title or 'the session'!r}"
                           + (f" at turn {view.seq}" if view.seq is not None else ""),
                           timeout=3)

    def preview(self, source: SourceView, search_query: str) -> None:
        from tui.screens.source_preview import SourcePreview

        asked = [a for a in self.screen.chat_view.answers if source in a.sources]
        query = asked[-1].question if asked else search_query
        self.screen.app.push_screen(SourcePreview(source, query))

    def rate(self, answer: AnswerMessage, rating: int) -> None:
        if answer.log_id is None:
            self.screen.notify("This answer has no retrieval log entry to rate.",
                               severity="warning")
            return
        self.screen.run_worker(self._rate(answer, answer.log_id, rating), group="feedback")

    async def _rate(self, answer: AnswerMessage, log_id: str, rating: int) -> None:
        feedback = self.screen.backend.chat.feedback
        if await succeeded(self.screen.app, "Saving feedback", lambda: feedback(log_id, rating)):
            answer.rating = rating
            self.screen.notify("Thanks: 👍 recorded" if rating > 0 else "Thanks: 👎 recorded. "
                               "Which file answers it? Select it in the sources pane and press "
                               "c (`brain log --disliked --export` makes it an eval case).")

    def mark_right(self, log_id: str, source: SourceView) -> None:
        """The user named the file that answers the question (after a 👎)."""
        mark = self.screen.backend.chat.mark_right_source

        async def run() -> None:
            if await succeeded(self.screen.app, "Saving the right source",
                               lambda: mark(log_id, source.source)):
                for answer in self.screen.chat_view.answers:
                    if answer.log_id == log_id:
                        answer.rating = -1
                self.screen.notify(f"Marked {source.relpath} as the right source: "
                                   "`brain log --disliked --export` writes it as an eval case.")

        self.screen.run_worker(run(), group="feedback")

    def last_answer(self) -> AnswerMessage | None:
        focused = self.screen.focused
        if isinstance(focused, AnswerMessage) and focused.finished:
            return focused
        answers = [a for a in self.screen.chat_view.answers if a.finished]
        return answers[-1] if answers else None

    def rate_last(self, rating: int) -> None:
        answer = self.last_answer()
        if answer is not None:
            self.rate(answer, rating)

    def copy_last(self) -> None:
        answer = self.last_answer()
        if answer is None:
            self.screen.notify("No answer to copy yet.", severity="warning")
            return
        answer.action_copy()

    # --- sessions ---------------------------------------------------------------------------

    async def new_session(self) -> None:
        screen = self.screen
        self.cancel()
        self.session_id = None
        screen.state.update(last_session=None)
        await screen.chat_view.clear()
        screen.sources_pane.show((), "New session")
        screen.sources_pane.show_conversations(())
        screen.status_bar.dates = ""
        await screen.memory_pane.show_used(())
        screen.chat_input.focus()

    def resume(self, session_id: str) -> None:
        self.screen.run_worker(self._resume(session_id), group="session")

    async def _resume(self, session_id: str) -> None:
        screen = self.screen
        turns_of = screen.backend.sessions.turns

        def failed(failure: Failure) -> None:
            if isinstance(failure.error, HintedError):  # e.g. deleted elsewhere: start fresh
                self._forget(session_id)
            notify(screen.app, failure)
        turns: list[TurnView] | None = await attempt(
            screen.app, "Opening the session", lambda: turns_of(session_id), shown=failed)
        if turns is None:
            return
        self.session_id = session_id
        screen.state.update(last_session=session_id)
        await screen.chat_view.load_turns(turns)
        answers = screen.chat_view.answers
        if answers:
            await self.show_context(answers[-1])

    def _forget(self, session_id: str) -> None:
        if self.session_id == session_id:
            self.session_id = None
        if self.screen.state.state.last_session == session_id:
            self.screen.state.update(last_session=None)
