"""`ModelCatalog` (chat/models.py) over an OpenAI-compatible server's /v1/models.

The API says less than Ollama's /api/show: no capabilities, and a context length only where
the server adds one (vLLM, llama.cpp). Unknown capabilities mean "let the server decide" (as
for an old Ollama), and an unknown length means the configured ollama.context_window.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from assistant.llm.errors import ChatError
from assistant.llm.models import ModelFacts
from assistant.llm.openai_wire import Endpoint, OpenAIClient, RemoteModel


class OpenAICatalog:
    def __init__(self, endpoint: Endpoint, timeout: float) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._cache: dict[str, ModelFacts] = {}
        self._lock = threading.Lock()

    def remote_models(self) -> list[RemoteModel]:
        with OpenAIClient(self.endpoint, self.timeout) as client:
            return client.models()

    def list_models(self) -> list[str]:
        return sorted(m.id for m in self.remote_models())

    def cached(self, model: str) -> ModelFacts | None:
        with self._lock:
            return self._cache.get(model)

    def facts(self, model: str) -> ModelFacts:
        cached = self.cached(model)
        if cached is not None:
            return cached
        models = self.remote_models()
        found = next((m for m in models if m.id == model), None)
        if found is None:
            listed = ", ".join(sorted(m.id for m in models)[:8]) or "none"
            raise ChatError(
                "model_not_found",
                f"model {model!r} is not served at {self.endpoint.base_url} (it serves: "
                f"{listed})", "set llm.model to one of them (`brain config edit`)",
                retryable=False)
        facts = ModelFacts(model, found.context_length)
        with self._lock:
            self._cache[model] = facts
        return facts

    def saw_untagged_reasoning(self, model: str) -> None:
        with self._lock:
            cached = self._cache.get(model)
            if cached is not None:
                self._cache[model] = replace(cached, thinking_only=True)
