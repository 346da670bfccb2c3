"""The chunks behind the selected answer, with the evidence for each: why it was retrieved; and
under them, when the answer recalled any, the earlier conversations it was given ([c1]…)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from assistant.plain_text import plain
from tui.plain import plain_text
from tui.views import ConversationView, SourceView
from tui.widgets.conversations_table import ConversationsTable

# (label, width); "source" holds the relative path with the heading path under it.
COLUMNS = (("#", 2), ("source", None), ("vec", 4), ("kw", 4), ("rank", 4), ("", 2))


def format_vector(value: float | None) -> str:
    return "—" if value is None else f"{max(0.0, value) * 100:.0f}%"


def flags(source: SourceView) -> str:
    """✓ cited in the answer, ⏱ boosted for being recently modified."""
    return ("✓" if source.cited else " ") + ("⏱" if source.recent else "")


def format_keyword(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def source_label(source: SourceView) -> Text:
    """The path, then the heading path and how many more chunks of the file matched."""
    label = plain_text(source.relpath, overflow="ellipsis", no_wrap=True)
    if source.page:  # a PDF chunk: which page, as the answer cites it
        label.append(f" {source.page}")
    label.append("\n" + plain(source.heading or "—"), style="dim")
    if source.more_from_file:
        label.append(f"  +{source.more_from_file} more from this file", style="dim italic")
    return label


class SourcesPane(Vertical):
    BORDER_TITLE = "Sources"
    BINDINGS: ClassVar[list[BindingType]] = [
        # After a 👎: name the file that should have been found (an eval case).
        Binding("c", "mark_right", "Right source"),
    ]

    class MarkedRight(Message):
        """The user named `source` as the right one for the retrieval logged as `log_id`."""

        def __init__(self, source: SourceView, log_id: str) -> None:
            super().__init__()
            self.source = source
            self.log_id = log_id

    class Chosen(Message):
        """A source was selected (Enter on its row): preview it."""

        def __init__(self, source: SourceView) -> None:
            super().__init__()
            self.source = source

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.sources: tuple[SourceView, ...] = ()
        self.log_id: str | None = None  # the retrieval log entry of what is shown

    def compose(self) -> ComposeResult:
        yield Static("No answer yet: sources appear here with their scores.",
                     classes="pane-caption", markup=False)
        table: DataTable[str | Text] = DataTable(cursor_type="row", zebra_stripes=True,
                                                 id="source-table")
        yield table
        yield Static("Earlier conversations", id="recalled-caption", classes="pane-caption",
                     markup=False)
        yield ConversationsTable(id="recalled")

    def on_mount(self) -> None:
        table = self.table
        for label, width in COLUMNS:
            table.add_column(label, width=width, key=label or "flags")

    def on_resize(self) -> None:
        # The source column takes whatever the fixed columns leave (no sideways scrolling).
        table = self.table
        fixed = sum(w + 2 for _, w in COLUMNS if w) + 2
        column = table.columns.get(ColumnKey("source"))
        if column is not None:
            column.width = max(12, self.size.width - fixed - 2)
            column.auto_width = False
            table.refresh()

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one("#source-table", DataTable)

    @property
    def recalled(self) -> ConversationsTable:
        return self.query_one(ConversationsTable)

    def show_conversations(self, conversations: tuple[ConversationView, ...], *,
                           searched: bool = False) -> None:
        """The earlier conversations the answer was given, or a search found (none: the
        section is hidden)."""
        self.recalled.label = "" if searched else "c"
        self.recalled.show(conversations)
        cited = sum(1 for c in conversations if c.cited)
        count = (f"{len(conversations)} found" if searched
                 else f"{len(conversations)}, {cited} cited")
        self.query_one("#recalled-caption", Static).update(
            f"Earlier conversations ({count}) — Enter opens one")
        self.set_class(bool(conversations), "-recalled")

    def show(self, sources: tuple[SourceView, ...], caption: str, *, low: bool = False,
             log_id: str | None = None) -> None:
        self.sources = sources
        self.log_id = log_id
        table = self.table
        table.clear()
        for s in sources:
            table.add_row(
                str(s.number),
                source_label(s),
                format_vector(s.vector),
                format_keyword(s.keyword),
                str(s.fused_rank),
                flags(s),
                key=str(s.number),
                height=2,
            )
        if not sources:
            caption += " — nothing retrieved"
        elif low:
            caption += " — ⚠ low confidence"
        self.query_one(".pane-caption", Static).update(caption)
        self.set_class(low, "-low")

    def select(self, number: int) -> SourceView | None:
        for row, source in enumerate(self.sources):
            if source.number == number:
                self.table.move_cursor(row=row)
                return source
        return None

    def action_mark_right(self) -> None:
        row = self.table.cursor_row
        if not self.sources or not self.table.has_focus or not 0 <= row < len(self.sources):
            self.notify("Select the source that answers the question first.", severity="warning")
            return
        if self.log_id is None:
            self.notify("These sources were not logged: nothing to mark.", severity="warning")
            return
        self.post_message(self.MarkedRight(self.sources[row], self.log_id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        for source in self.sources:
            if str(source.number) == key:
                self.post_message(self.Chosen(source))
                return
