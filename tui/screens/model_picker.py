"""Choose the chat model from the models Ollama has installed (/api/tags)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from assistant.plain_text import plain
from tui.plain import plain_text
from tui.protocols import OllamaApi
from tui.views import ModelView
from tui.workers import Failure, attempt


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB" if n else ""


class ModelPicker(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss(None)", "Cancel", priority=True),  # (type-ahead: chat.py)
        Binding("enter", "choose", "Choose", show=False, priority=True),
    ]

    def __init__(self, ollama: OllamaApi, current: str) -> None:
        super().__init__()
        self.ollama = ollama
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="model-picker"):
            yield Static(f"Chat model (now: {self.current})", classes="dialog-title",
                         markup=False)
            yield Static("Asking the model server for its models…", id="model-status", markup=False)
            yield OptionList(id="model-list")

    def on_mount(self) -> None:
        self.load()

    def load(self) -> None:
        self.run_worker(self._load(), exclusive=True)

    async def _load(self) -> None:
        # Ollama down…, or anything unexpected: said in the dialog.
        models = await attempt(self.app, "Listing models", self.ollama.models,
                               shown=self._failed)
        if models is not None:
            self._show(models)

    def _failed(self, failed: Failure) -> None:
        self.query_one("#model-status", Static).update(
            plain(f"Cannot list models: {failed.message}"))

    def _show(self, models: list[ModelView]) -> None:
        status = self.query_one("#model-status", Static)
        if not models:
            status.update("Ollama has no models yet: run `ollama pull qwen3:4b`.")
            return
        status.update(f"{len(models)} installed · Enter to choose")
        options = self.query_one(OptionList)
        for m in models:
            mark = "● " if m.name == self.current else "  "
            options.add_option(Option(plain_text(f"{mark}{m.name}  {_size(m.size_bytes)}"),
                                      id=m.name))
        names = [m.name for m in models]
        options.highlighted = names.index(self.current) if self.current in names else 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_choose(self) -> None:
        """Enter, as a priority key: the picker closes before the keys typed after it."""
        options = self.query_one(OptionList)
        index = options.highlighted
        if index is not None and options.option_count:
            self.dismiss(options.get_option_at_index(index).id)
