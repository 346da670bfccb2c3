"""What the chat engine needs to know about Ollama's models: installed names, context length,
capabilities. Looked up once per model and cached (a /api/show round trip per turn would cost
more than the whole prompt assembly)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from assistant.chat import errors


@dataclass(frozen=True, slots=True)
class ModelFacts:
    name: str
    context_length: int | None  # what the model supports (/api/show), None when not reported
    capabilities: tuple[str, ...] = ()  # "completion", "tools", "thinking", "embedding"…

    @property
    def supports_tools(self) -> bool:
        # Older Ollama versions report no capabilities: let the server decide.
        return not self.capabilities or "tools" in self.capabilities


class ModelCatalog(Protocol):
    def list_models(self) -> list[str]: ...

    def facts(self, model: str) -> ModelFacts: ...


class OllamaCatalog:
    """ModelCatalog over `OllamaClient` (/api/tags, /api/show), with a per-model cache."""

    def __init__(self, host: str, timeout: float) -> None:
        self.host = host
        self.timeout = timeout
        self._cache: dict[str, ModelFacts] = {}
        self._lock = threading.Lock()

    def _client(self):  # type: ignore[no-untyped-def]
        from assistant.ollama_client import OllamaClient

        return OllamaClient(self.host, self.timeout)

    def _mapped(self, exc: Exception, model: str) -> errors.ChatError:
        return errors.map_error(exc, host=self.host, model=model, timeout_s=self.timeout)

    def list_models(self) -> list[str]:
        try:
            with self._client() as client:
                return sorted(m.name for m in client.list_models() if m.name)
        except Exception as exc:
            raise self._mapped(exc, "") from exc

    def facts(self, model: str) -> ModelFacts:
        with self._lock:
            cached = self._cache.get(model)
        if cached is not None:
            return cached
        try:
            with self._client() as client:
                info = client.show(model)
        except Exception as exc:
            raise self._mapped(exc, model) from exc
        facts = ModelFacts(model, info.context_length, info.capabilities)
        with self._lock:
            self._cache[model] = facts
        return facts


def effective_window(facts: ModelFacts | None, *, num_ctx: int, cap: int) -> int:
    """The context length to request (num_ctx) and budget for.

    An explicit ollama.num_ctx wins. Otherwise the model's own length, capped at
    ollama.context_window: models report 32k-128k, and asking Ollama for all of it would reserve
    gigabytes of KV cache for a chat that rarely needs more than a few thousand tokens.
    """
    if num_ctx > 0:
        return num_ctx
    if facts is not None and facts.context_length:
        return min(facts.context_length, cap)
    return cap
