"""The conversation: questions and answers, scrolled to the newest while streaming."""

from __future__ import annotations

from itertools import count

from textual.containers import VerticalScroll
from textual.widgets import Static

from tui.views import Finished, TurnView
from tui.widgets.message import AnswerMessage, QuestionMessage

WELCOME = (
    "Ask anything about your indexed folders.\n"
    "F3 adds folders · F2 sessions · F1 all keys · Ctrl+P every action"
)

_ids = count(1)


class ChatView(VerticalScroll):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.can_focus = False

    def on_mount(self) -> None:
        self._show_welcome()

    def _show_welcome(self) -> None:
        if not self.query(".answer, .question"):
            self.mount(Static(WELCOME, id="welcome", markup=False))

    @property
    def answers(self) -> list[AnswerMessage]:
        return list(self.query(AnswerMessage))

    async def add_exchange(self, question: str) -> AnswerMessage:
        for welcome in self.query("#welcome"):
            await welcome.remove()
        answer = AnswerMessage(id=f"answer-{next(_ids)}")
        await self.mount_all([QuestionMessage(question), answer])
        self.scroll_end(animate=False)
        return answer

    async def clear(self) -> None:
        await self.remove_children()
        self._show_welcome()

    async def load_turns(self, turns: list[TurnView]) -> None:
        await self.remove_children()
        for turn in turns:
            answer = await self.add_exchange(turn.question)
            answer.question = turn.question
            answer.sources = turn.sources
            answer.memories = turn.memories
            answer.conversations = turn.conversations
            answer.log_id = turn.log_id
            answer.text = turn.answer
            answer.truncated = turn.truncated
            answer.notes = turn.notes
            await answer.finish(None, stored=True)
            if turn.status:
                answer.set_status(turn.status, warn="⚠" in turn.status)
        self._show_welcome()
        self.scroll_end(animate=False)

    async def finish(self, answer: AnswerMessage, done: Finished | None, error: str = "") -> None:
        await answer.finish(done, error=error)
        if self.is_vertical_scroll_end or self.max_scroll_y - self.scroll_y < 5:
            self.scroll_end(animate=False)
