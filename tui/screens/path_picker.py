"""Pick a folder to index: browse with a tree or type a path."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DirectoryTree, Input, Static


class FolderTree(DirectoryTree):
    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [p for p in paths if p.is_dir() and not p.name.startswith(".")]


class PathPicker(ModalScreen[Path | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel", priority=True),  # (type-ahead: chat.py)
    ]

    def __init__(self, start: Path) -> None:
        super().__init__()
        self.start = start

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="path-picker"):
            yield Static("Add a folder: choose in the tree or type a path, then Enter",
                         classes="dialog-title", markup=False)
            yield Input(str(self.start), id="path-input")
            yield FolderTree(self.start, id="path-tree")
            yield Static("", id="path-error", classes="error-text", markup=False)

    def on_directory_tree_directory_selected(self, event: DirectoryTree.DirectorySelected) -> None:
        event.stop()
        self.query_one(Input).value = str(event.path)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        raw = event.value.strip()
        path = Path(raw).expanduser() if raw else None
        if path is None or not path.is_dir():
            self.query_one("#path-error", Static).update(
                f"Not a folder: {raw!r}" if raw else "Type or choose a folder"
            )
            return
        self.dismiss(path.resolve())
