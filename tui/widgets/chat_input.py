"""The multi-line message box: Enter sends, Shift+Enter or Ctrl+J adds a line, Up/Down history."""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.message import Message
from textual.widgets import TextArea

HISTORY_LIMIT = 200
# Longest first: the box shows the longest that fits on its one line (never a cut word).
PLACEHOLDERS = (
    "Ask about your notes…  (Enter send · Shift+Enter/Ctrl+J new line)",
    "Ask about your notes…  (Enter send · Ctrl+J new line)",
    "Ask about your notes…",
    "Ask…",
)


class ChatInput(TextArea):
    class Submitted(Message):
        def __init__(self, chat_input: ChatInput, text: str) -> None:
            super().__init__()
            self.chat_input = chat_input
            self.text = text

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
            placeholder=PLACEHOLDERS[0],
        )
        self.sent: list[str] = []
        self._history_pos: int | None = None  # index into history while browsing
        self._draft = ""  # what was typed before browsing started
        # Sent with Enter and not yet taken by the chat: a quit handled before the chat saw
        # the message stores it (ChatScreen.shutdown) rather than losing it.
        self._pending: list[str] = []

    def on_resize(self, event: events.Resize) -> None:
        room = self.content_size.width - 1  # the cursor cell at the end
        self.placeholder = next((p for p in PLACEHOLDERS if cell_len(p) <= room),
                                PLACEHOLDERS[-1])

    def take_pending(self, text: str | None = None) -> str | None:
        """A question Enter sent that nobody took yet — `text` if given (its own message),
        else the oldest (a quit) — and from now on taken; None if there is none."""
        if text is None:
            return self._pending.pop(0) if self._pending else None
        if text not in self._pending:
            return None
        self._pending.remove(text)
        return text

    def remember(self, text: str) -> None:
        if text and (not self.sent or self.sent[-1] != text):
            self.sent.append(text)
            del self.sent[:-HISTORY_LIMIT]
        self._history_pos = None

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            event.stop()
            event.prevent_default()
            text = self.text.strip()
            if text:
                self._pending.append(text)
                self.post_message(self.Submitted(self, text))
            return
        if key in ("shift+enter", "ctrl+j"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "up" and self.cursor_location[0] == 0 and self._browse(-1):
            event.stop()
            event.prevent_default()
            return
        if key == "down" and self.cursor_location[0] == self.document.line_count - 1 and (
            self._browse(+1)
        ):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def _browse(self, step: int) -> bool:
        """Move through the history; False when there is nowhere to go (normal cursor move)."""
        if not self.sent:
            return False
        if self._history_pos is None:
            if step > 0:
                return False
            self._draft = self.text
            pos = len(self.sent) - 1
        else:
            pos = self._history_pos + step
        if pos < 0:
            return True  # at the oldest entry: stay there
        if pos >= len(self.sent):
            self._history_pos = None
            self._set(self._draft)
            return True
        self._history_pos = pos
        self._set(self.sent[pos])
        return True

    def _set(self, text: str) -> None:
        self.load_text(text)
        last = self.document.line_count - 1
        self.move_cursor((last, len(self.document.get_line(last))))
