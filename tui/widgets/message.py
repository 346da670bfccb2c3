"""One exchange in the chat: the user's question and the assistant's streamed answer."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from assistant.plain_text import plain
from tui.views import ConversationView, Finished, MemoryView, SourceView
from tui.widgets.thinking import ThinkingBlock
from tui.wording import plural

if TYPE_CHECKING:
    # Textual's Markdown pulls in markdown-it (~0.1 s): imported when the first answer is
    # shown (or by the warm-up after the first frame), not before the first paint.
    from textual.widgets import Markdown
    from textual.widgets.markdown import MarkdownStream

_CITATION = re.compile(r"\[(\d{1,2})\]")
_RECALLED = re.compile(r"\[[cC](\d{1,2})\]")  # an earlier conversation, [c1]
_FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)
_CODE_BLOCK = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def linkify_citations(text: str) -> str:
    """Turn [n] into Markdown links `cite:n` outside code, so a click jumps to source n."""
    parts = re.split(r"(^```.*?^```[ \t]*$|`[^`\n]*`)", text, flags=re.MULTILINE | re.DOTALL)
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 1:  # code: leave untouched
            out.append(part)
        else:
            part = _CITATION.sub(lambda m: f"[\\[{m.group(1)}\\]](cite:{m.group(1)})", part)
            out.append(_RECALLED.sub(
                lambda m: f"[\\[c{m.group(1)}\\]](recall:{m.group(1)})", part))
    return "".join(out)


def code_blocks(text: str) -> list[str]:
    return [m.group(2).rstrip("\n") for m in _CODE_BLOCK.finditer(text)]


def cited_numbers(text: str) -> tuple[int, ...]:
    seen: list[int] = []
    for m in _CITATION.finditer(text):
        n = int(m.group(1))
        if n not in seen:
            seen.append(n)
    return tuple(seen)


class QuestionMessage(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "copy", "Copy", show=False)]

    def __init__(self, text: str) -> None:
        super().__init__(plain(text), markup=False, classes="question")
        self.text = text

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("Question copied to the clipboard")


class AnswerMessage(Vertical, can_focus=True):
    """Streams Markdown as tokens arrive; keeps the sources and memories of its answer. The
    model's reasoning, if any, goes to a collapsed `ThinkingBlock` above it, never into
    `text` (what is copied, cited and stored)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "copy", "Copy answer"),
        Binding("t,enter", "toggle_thinking", "Show thinking"),
        Binding("k", "copy_code", "Copy code"),
        Binding("plus,equals_sign", "rate(1)", "👍"),
        Binding("minus", "rate(-1)", "👎"),
        *[Binding(str(n), f"cite({n})", show=False) for n in range(1, 10)],
    ]

    class Rated(Message):
        def __init__(self, answer: AnswerMessage, rating: int) -> None:
            super().__init__()
            self.answer = answer
            self.rating = rating

    class Focused(Message):
        def __init__(self, answer: AnswerMessage) -> None:
            super().__init__()
            self.answer = answer

    class RecallSelected(Message):
        """A [c<n>] citation was clicked: the earlier conversation n."""

        def __init__(self, answer: AnswerMessage, number: int) -> None:
            super().__init__()
            self.answer = answer
            self.number = number

    class CitationSelected(Message):
        def __init__(self, answer: AnswerMessage, number: int) -> None:
            super().__init__()
            self.answer = answer
            self.number = number

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="answer")
        self.text = ""
        self.question = ""
        self.sources: tuple[SourceView, ...] = ()
        self.memories: tuple[MemoryView, ...] = ()
        self.conversations: tuple[ConversationView, ...] = ()  # recalled earlier turns, [c<n>]
        self.low_confidence = False
        self.empty_index = False
        self.truncated = False  # cut off at the answer cap (F9 continues it)
        self.notes: tuple[str, ...] = ()  # e.g. "the model cited none of these sources"
        self.log_id: str | None = None
        # "remember that …": stored as a memory, confirmed without asking the model (no
        # model, tokens or time to show; the panes keep the last real answer's context).
        self.noted = False
        self.failed = False  # ended with an error (Ollama down…): no answer to show sources for
        self.finished = False
        self.rating = 0
        self._status_text = "preparing…"
        self._reply_started: float | None = None  # the model's first output (monotonic)
        self._stream: MarkdownStream | None = None
        self._streamed = ""  # the Markdown the stream has shown
        self._code_index = 0

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown

        yield Markdown("", open_links=False, classes="answer-body")
        yield Static(self._status_text, classes="answer-status", markup=False)

    @property
    def body(self) -> Markdown:
        from textual.widgets import Markdown

        return self.query_one(Markdown)

    def set_status(self, text: str, *, warn: bool = False) -> None:
        self._status_text = text
        status = self.query_one(".answer-status", Static)
        status.update(plain(text))
        status.set_class(warn, "-warn")

    @property
    def thinking(self) -> ThinkingBlock | None:
        blocks = self.query(ThinkingBlock)
        return blocks.first() if blocks else None

    async def _thinking_block(self) -> ThinkingBlock:
        block = self.thinking
        if block is None:
            block = ThinkingBlock(started=self._reply_started)
            await self.mount(block, before=self.body)
            self.refresh_bindings()  # `t` / Enter now show it
        return block

    def waiting(self, text: str) -> None:
        """Nothing from the model yet: what Ollama is doing, with the way out."""
        self.set_status(f"{text} · Esc stops")

    async def think(self, fragment: str) -> None:
        """More of the model's reasoning (before the answer, or between tool rounds)."""
        self._started()
        block = await self._thinking_block()
        block.add(fragment)
        if block.thinking:
            self.set_status("thinking… · Esc stops")

    async def append(self, fragment: str) -> None:
        self._started()
        block = self.thinking
        if block is not None:
            block.end()
        if self._stream is None:
            body = self.body
            self._stream = type(body).get_stream(body)
            self.set_status("answering…")
        self.text += fragment
        self._streamed += fragment
        await self._stream.write(plain(fragment))  # model output: shown, never obeyed

    async def replace(self, text: str, thinking: str = "") -> None:
        """Show `text` as the answer and `thinking` as the reasoning instead of what was
        shown so far (the stream goes on from there)."""
        self._started()
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        block = self.thinking
        if thinking:
            block = await self._thinking_block()
            block.set_text(thinking)
            if text:
                block.end()
        elif block is not None:  # what looked like reasoning was the answer
            await block.remove()
            self.refresh_bindings()
        self.text = self._streamed = text
        await self.body.update(plain(text))
        if text:
            self.set_status("answering…")

    def _started(self) -> None:
        if self._reply_started is None:
            self._reply_started = time.monotonic()

    async def finish(self, done: Finished | None, *, error: str = "",
                     stored: bool = False) -> None:
        """The answer is over: `done` (None: it failed with `error`, or it is a `stored` turn
        shown again, whose sources carry the cited marks the engine decided)."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        block = self.thinking
        if block is not None:
            block.end(stopped=not self.text and (error != "" or bool(done and done.interrupted)))
        # The engine's marks when it decided (a recited `[1] path` header is no citation).
        if done is not None:
            cited = set(done.cited)
            self.truncated, self.notes = done.truncated, done.notes
        elif stored:
            cited = {s.number for s in self.sources if s.cited}
        else:
            cited = set(cited_numbers(self.text))
        self.sources = tuple(
            s if s.cited == (s.number in cited) else _with_cited(s, s.number in cited)
            for s in self.sources
        )
        shown = linkify_citations(self.text) if self.text else ""
        if shown != self._streamed:  # citations to link, or text the stream did not show
            await self.body.update(plain(shown))
        parts: list[str] = []
        if done is not None and self.noted:
            parts.append("remembered (no model asked) · F11 undoes it")
        elif done is not None:
            parts += [done.model, plural(done.tokens, "token"), f"{done.seconds:.1f} s"]
            if done.read:
                parts.append(done.read)
            if done.interrupted:
                parts.append("interrupted")
            if done.notice:
                parts.append(f"⚠ {done.notice}")
            parts += [f"⚠ {note}" for note in done.notes]
        if error:
            parts.append(error)
            self.failed = not self.text
        if self.low_confidence:
            parts.append("⚠ low confidence: your files may not contain the answer")
        self.set_status(" · ".join(parts), warn=bool(error) or self.low_confidence
                        or bool(done and (done.notice or done.notes)))
        self.finished = True  # last: whoever waits for it sees the finished text and status

    def on_focus(self) -> None:
        self.post_message(self.Focused(self))

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("Answer copied to the clipboard")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Without reasoning to show, `t` and Enter are not ours (nor in the footer).
        return action != "toggle_thinking" or self.thinking is not None

    def action_toggle_thinking(self) -> None:
        block = self.thinking
        if block is not None:
            block.collapsed = not block.collapsed

    def action_copy_code(self) -> None:
        blocks = code_blocks(self.text)
        if not blocks:
            self.notify("This answer has no code block", severity="warning")
            return
        index = self._code_index % len(blocks)
        self._code_index += 1
        self.app.copy_to_clipboard(blocks[index])
        self.notify(f"Code block {index + 1}/{len(blocks)} copied to the clipboard")

    def action_rate(self, rating: int) -> None:
        if not self.finished:
            return
        self.post_message(self.Rated(self, rating))

    def action_cite(self, number: int) -> None:
        self.post_message(self.CitationSelected(self, number))

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        event.stop()
        href = event.href
        if href.startswith("cite:") and href[5:].isdigit():
            self.post_message(self.CitationSelected(self, int(href[5:])))
        elif href.startswith("recall:") and href[7:].isdigit():
            self.post_message(self.RecallSelected(self, int(href[7:])))
        else:
            self.app.open_url(href)


def _with_cited(source: SourceView, cited: bool) -> SourceView:
    from dataclasses import replace

    return replace(source, cited=cited)
