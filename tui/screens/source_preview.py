"""The full text of one retrieved chunk, question words highlighted; `e` opens it in $EDITOR."""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from typing import ClassVar

from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from assistant.plain_text import plain
from indexing.errors import log_failure
from tui.highlight import highlight
from tui.views import SourceView
from tui.widgets.sources_pane import format_keyword, format_vector

log = logging.getLogger(__name__)


def editor_command(path: str, line: int) -> list[str]:
    """$VISUAL/$EDITOR (with its own arguments) opened at `line`; vi if neither is set."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    argv = shlex.split(editor)
    name = os.path.basename(argv[0])
    if name in ("code", "codium", "code-insiders"):
        return [*argv, "--goto", f"{path}:{line}"]
    # vi, vim, nvim, nano, emacs, micro, helix, kak all understand +LINE.
    return [*argv, f"+{line}", path]


class SourcePreview(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", priority=True),  # (type-ahead: chat.py)
        Binding("e", "edit", "Open in $EDITOR"),
        Binding("y", "copy", "Copy text"),
    ]

    def __init__(self, source: SourceView, query: str) -> None:
        super().__init__()
        self.source = source
        self.query_text = query

    def compose(self) -> ComposeResult:
        s = self.source
        with Vertical(id="preview-box"):
            yield Static(
                plain(f"[{s.number}] {s.source}:{s.start_line}-{s.end_line}"), id="preview-path",
                markup=False,
            )
            facts = [
                f"heading: {s.heading}" if s.heading else "",
                f"vector {format_vector(s.vector)}",
                f"keyword {format_keyword(s.keyword)}",
                f"fused rank {s.fused_rank}",
                "recently modified" if s.recent else "",
                "cited in the answer" if s.cited else "not cited",
            ]
            yield Static(plain(" · ".join(f for f in facts if f)), id="preview-facts",
                         markup=False)
            with VerticalScroll(id="preview-scroll"):
                yield Static(highlight(s.text, self.query_text), id="preview-text")
            yield Footer()

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.source.text)
        self.notify("Chunk text copied to the clipboard")

    def action_edit(self) -> None:
        if not os.path.exists(self.source.source):
            self.notify(f"{self.source.source} no longer exists", severity="error")
            return
        command = editor_command(self.source.source, self.source.start_line)
        try:
            with self.app.suspend():
                subprocess.run(command, check=False)
        except FileNotFoundError:
            self.notify(
                f"Editor {command[0]!r} not found: set $EDITOR", severity="error", timeout=8
            )
        # Not a worker (a key action on the loop, around the terminal's suspend): the expected
        # SuspendNotSupported (a web terminal) or OSError, said in the terminal's own words;
        # anything else is said too (the app stays up) and leaves its traceback.
        except Exception as exc:
            log_failure(log, "opening an editor failed", exc,
                        foreseen=(SuspendNotSupported, OSError))
            self.notify(f"Cannot open an editor here: {exc or type(exc).__name__}",
                        severity="error", timeout=8)
