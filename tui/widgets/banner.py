"""The warning strip shown while Ollama is unreachable or the model is missing."""

from __future__ import annotations

from textual.widgets import Static

from assistant.plain_text import plain
from tui.views import OllamaStatus


class Banner(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.display = False

    def show_status(self, status: OllamaStatus, model: str) -> None:
        if status.ok:
            self.display = False
            return
        lines = [f"⚠ Chat is offline: {status.message}"]
        if status.model_missing:
            lines.append(f"  Pull it with: ollama pull {model}   (or pick another model: F4)")
        else:
            lines.append(f"  {status.hint or 'Start Ollama: ollama serve'}")
            lines.append(f"  Then make sure the model is there: ollama pull {model}")
        lines.append("  Indexing, search (Ctrl+F) and memory editing still work; "
                     "chat reconnects by itself.")
        self.update(plain("\n".join(lines)))
        self.display = True
