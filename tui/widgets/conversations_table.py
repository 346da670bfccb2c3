"""Earlier conversations as a table: date, session title and the turn, best first. Used under
the sources of an answer (what it recalled, [c1]…) and by the sessions screen's search.
Enter on a row posts `ConversationsTable.Chosen`: the screen opens that session."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from assistant.plain_text import plain
from tui.plain import plain_text
from tui.views import ConversationView

COLUMNS = (("#", 3), ("when", 10), ("conversation", None), ("", 1))
SNIPPET = 200


def conversation_label(view: ConversationView) -> Text:
    """The session's title, then what was said (the question; for a session, its summary)."""
    if view.deleted:
        return plain_text(view.title or "conversation deleted", style="dim italic")
    label = plain_text(view.title or "(untitled)", overflow="ellipsis", no_wrap=True)
    said = view.question if view.seq is not None else view.answer
    said = " ".join(said.split())[:SNIPPET]
    where = f"turn {view.seq}: " if view.seq is not None else "summary: "
    label.append("\n" + where + plain(said or "—"), style="dim")
    return label


class ConversationsTable(DataTable[str | Text]):
    class Chosen(Message):
        """Enter on an earlier conversation: open its session."""

        def __init__(self, conversation: ConversationView) -> None:
            super().__init__()
            self.conversation = conversation

    def __init__(self, *, label: str = "c", id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.label = label  # "c": numbered [c1] as the answer cites; "": ranks
        self.conversations: tuple[ConversationView, ...] = ()

    def on_mount(self) -> None:
        for name, width in COLUMNS:
            self.add_column(name, width=width, key=name or "flags")

    def on_resize(self) -> None:
        # The conversation column takes what the fixed ones leave (no sideways scrolling).
        fixed = sum(w + 2 for _, w in COLUMNS if w) + 2
        column = self.columns.get(ColumnKey("conversation"))
        if column is not None:
            column.width = max(12, self.size.width - fixed)
            column.auto_width = False
            self.refresh()

    def show(self, conversations: tuple[ConversationView, ...]) -> None:
        self.conversations = conversations
        self.clear()
        for view in conversations:
            self.add_row(
                f"{self.label}{view.number}", view.date[:10], conversation_label(view),
                "✓" if view.cited else "", key=str(view.number), height=2,
            )

    def chosen(self) -> ConversationView | None:
        if not self.conversations or self.cursor_row >= len(self.conversations):
            return None
        return self.conversations[self.cursor_row]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        view = self.chosen()
        if view is not None:
            self.post_message(self.Chosen(view))
