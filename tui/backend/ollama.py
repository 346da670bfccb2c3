"""Is Ollama up, is the chat model there, which models are installed (blocking)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assistant.services import Services
from tui.views import ModelView, OllamaStatus

if TYPE_CHECKING:
    from assistant.llm.ollama_client import OllamaClient

STATUS_TIMEOUT = 3.0  # seconds: the live Ollama check must not hang a worker for long


class OllamaAdapter:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.ctx = services.ctx

    def _client(self, timeout: float) -> OllamaClient:
        from assistant.llm.ollama_client import OllamaClient

        return OllamaClient(self.ctx.config.ollama.host, timeout=timeout)

    def server_name(self) -> str:
        from assistant.llm.errors import server_words

        return server_words(self.ctx.config.llm.provider).name

    def status(self, model: str) -> OllamaStatus:
        from assistant.llm.ollama_client import OllamaError, model_matches

        if self.ctx.config.llm.provider == "openai":
            return self._openai_status(model)

        try:
            with self._client(STATUS_TIMEOUT) as client:
                version = client.version()
                installed = [m.name for m in client.list_models()]
        except OllamaError as exc:
            return OllamaStatus(False, message=str(exc).split("\n")[0], hint=exc.hint or "")
        if not any(model_matches(model, name) for name in installed):
            return OllamaStatus(
                False, version, f"the chat model {model!r} is not installed in Ollama",
                f"run `ollama pull {model}`", model_missing=True,
            )
        return OllamaStatus(True, version)

    def _openai_status(self, model: str) -> OllamaStatus:
        from assistant.errors import UserError
        from assistant.llm.provider import list_models

        server = self.services.link()
        try:
            served = [m.name for m in list_models(server, STATUS_TIMEOUT)]
        except UserError as exc:
            return OllamaStatus(False, message=str(exc.args[0]).split("\n")[0],
                                hint=exc.hint or "")
        if model not in served:
            return OllamaStatus(
                False, "", f"the chat model {model!r} is not served at {server.url}",
                "set llm.model to one of: " + (", ".join(served) or "none"),
                model_missing=True,
            )
        return OllamaStatus(True, "OpenAI-compatible")

    def models(self) -> list[ModelView]:
        """The picker's list (F4), from whichever provider is configured."""
        from assistant.llm.provider import list_models

        models = list_models(self.services.link(), self.ctx.config.ollama.timeout)
        return [ModelView(m.name, m.size_bytes, m.family) for m in models]
