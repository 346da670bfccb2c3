"""What the chat engine needs to know about Ollama's models: installed names, context length,
capabilities. Looked up once per model and cached (a /api/show round trip per turn would cost
more than the whole prompt assembly)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from assistant.llm import errors

if TYPE_CHECKING:
    from assistant.llm.ollama_client import OllamaClient


@dataclass(frozen=True, slots=True)
class ModelFacts:
    name: str
    context_length: int | None  # what the model supports (/api/show), None when not reported
    capabilities: tuple[str, ...] = ()  # "completion", "tools", "thinking", "embedding"…
    # Reasons even with think: false (see ollama_client.thinking_only), or was seen doing so.
    thinking_only: bool = False

    @property
    def supports_tools(self) -> bool:
        # Older Ollama versions report no capabilities: let the server decide.
        return not self.capabilities or "tools" in self.capabilities


class ModelCatalog(Protocol):
    def list_models(self) -> list[str]: ...

    def facts(self, model: str) -> ModelFacts: ...

    def cached(self, model: str) -> ModelFacts | None:
        """The facts already known, without asking Ollama (None if not looked up yet)."""
        ...

    def saw_untagged_reasoning(self, model: str) -> None:
        """The model put untagged reasoning in `content` under think: false: from now on its
        replies are read as thinking-only."""
        ...


class OllamaCatalog:
    """ModelCatalog over `OllamaClient` (/api/tags, /api/show), with a per-model cache."""

    def __init__(self, host: str, timeout: float) -> None:
        self.host = host
        self.timeout = timeout
        self._cache: dict[str, ModelFacts] = {}
        self._lock = threading.Lock()

    def _client(self) -> OllamaClient:
        from assistant.llm.ollama_client import OllamaClient

        return OllamaClient(self.host, self.timeout)

    def _mapped(self, exc: Exception, model: str) -> errors.ChatError:
        return errors.map_error(exc, host=self.host, model=model, timeout_s=self.timeout)

    def list_models(self) -> list[str]:
        try:
            with self._client() as client:
                return sorted(m.name for m in client.chat_models() if m.name)
        except Exception as exc:  # worded by map_error, which logs a bug's traceback
            raise self._mapped(exc, "") from exc

    def cached(self, model: str) -> ModelFacts | None:
        with self._lock:
            return self._cache.get(model)

    def facts(self, model: str) -> ModelFacts:
        with self._lock:
            cached = self._cache.get(model)
        if cached is not None:
            return cached
        try:
            with self._client() as client:
                info = client.show(model)
        except Exception as exc:  # as list_models
            raise self._mapped(exc, model) from exc
        facts = ModelFacts(model, info.context_length, info.capabilities, info.thinking_only)
        with self._lock:
            self._cache[model] = facts
        return facts

    def saw_untagged_reasoning(self, model: str) -> None:
        with self._lock:
            cached = self._cache.get(model)
            if cached is not None:
                self._cache[model] = replace(cached, thinking_only=True)


def effective_window(facts: ModelFacts | None, *, num_ctx: int, cap: int) -> int:
    """The context length to request (num_ctx) and budget for.

    An explicit ollama.num_ctx wins, but never beyond the model's own length (Ollama caps it
    there anyway — server/sched.go effectiveContext — and the budget must match). Otherwise the
    model's own length, capped at ollama.context_window: models report 32k-256k, and asking
    Ollama for all of it would reserve gigabytes of KV cache for a chat that rarely needs more
    than a few thousand tokens. Every request of a session for the chat model carries this
    same value: another num_ctx makes Ollama reload the model.
    """
    model_length = facts.context_length if facts is not None and facts.context_length else None
    wanted = num_ctx if num_ctx > 0 else cap
    return min(wanted, model_length) if model_length else wanted


def configured_window(host: str, model: str, *, num_ctx: int, cap: int,
                      timeout: float = 10.0) -> int:
    """The num_ctx a chat with the configured model uses, for requests made outside a chat
    session (`brain memory` extraction and profile): the same value, so no reload. Asks
    /api/show; when that fails, what the chat would use without it."""
    try:
        facts: ModelFacts | None = OllamaCatalog(host, timeout).facts(model)
    except errors.ChatError:
        facts = None
    return effective_window(facts, num_ctx=num_ctx, cap=cap)
