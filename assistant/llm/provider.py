"""Which provider the config names, and the objects each one is talked to through.

Everything above this floor asks here instead of building an Ollama or OpenAI client itself:
the chat engine (`make_transport`, `make_catalog`), the CLI's memory extraction
(`chat_fn`), the doctor and the model picker (`list_models`), the embedder
(`openai_embed`). `[llm] provider = "ollama"` (the default) keeps every request exactly as
before; `"openai"` sends them to `[llm] base_url`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from assistant.llm.keys import resolve_api_key
from assistant.llm.models import ModelCatalog, OllamaCatalog
from assistant.llm.ollama_transport import Completion, OllamaTransport

if TYPE_CHECKING:
    from assistant.config import Config
    from assistant.llm.openai_wire import Endpoint

OLLAMA = "ollama"
OPENAI = "openai"


class ChatTransport(Protocol):
    """What the chat engine sends through (OllamaTransport, OpenAITransport)."""

    host: str

    def llm(self, *, model: str, window: int, think: bool | None, temperature: float,
            keep_alive: str, num_predict: int | None = None) -> Any: ...

    async def preload(self, model: str, *, num_ctx: int, keep_alive: str) -> str: ...

    async def complete(
        self, model: str, messages: list[dict[str, str]], *, num_ctx: int, keep_alive: str,
        schema: dict[str, Any] | None = None, num_predict: int | None = None,
        think: bool | None = False, temperature: float = 0.0,
    ) -> Completion: ...

    async def running(self, timeout: float = 1.5) -> dict[str, int | None] | None: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Link:
    """Where the model server is and how to reach it (no key: it is read when needed)."""

    provider: str = OLLAMA
    url: str = ""  # the Ollama host, or the OpenAI-compatible base URL (…/v1)
    api_key_env: str = ""
    api_key_file: str = ""

    @property
    def is_openai(self) -> bool:
        return self.provider == OPENAI

    def endpoint(self) -> Endpoint:
        """The OpenAI endpoint with its key (raises ApiKeyError for a bad key source)."""
        from assistant.llm.openai_wire import Endpoint, normalize_base_url

        return Endpoint(normalize_base_url(self.url),
                        resolve_api_key(self.api_key_env, self.api_key_file),
                        self.api_key_env.strip())


def link(config: Config) -> Link:
    llm = config.llm
    if llm.provider == OPENAI:
        return Link(OPENAI, llm.base_url.strip(), llm.api_key_env, llm.api_key_file)
    return Link(OLLAMA, llm.base_url.strip() or config.ollama.host)


def make_transport(link: Link, *, timeout: float, first_token_timeout: float) -> ChatTransport:
    if link.is_openai:
        from assistant.llm.openai_transport import OpenAITransport

        return OpenAITransport(link.endpoint(), timeout=timeout,
                               first_token_timeout=first_token_timeout)
    return OllamaTransport(link.url, timeout=timeout, first_token_timeout=first_token_timeout)


def make_catalog(link: Link, timeout: float) -> ModelCatalog:
    if link.is_openai:
        from assistant.llm.openai_catalog import OpenAICatalog

        return OpenAICatalog(link.endpoint(), timeout)
    return OllamaCatalog(link.url, timeout)


@dataclass(frozen=True, slots=True)
class ListedModel:
    name: str
    size_bytes: int = 0
    family: str = ""


def list_models(link: Link, timeout: float) -> list[ListedModel]:
    """The models the server offers, for the picker and the doctor (ChatError/OllamaError)."""
    if link.is_openai:
        from assistant.llm.openai_wire import OpenAIClient

        with OpenAIClient(link.endpoint(), timeout) as client:
            return [ListedModel(m.id, 0, m.owned_by) for m in client.models()]
    from assistant.llm.ollama_client import OllamaClient

    with OllamaClient(link.url, timeout=timeout) as client:
        # Chat models only: an embedding model (nomic-embed-text) cannot answer.
        return [ListedModel(m.name, m.size, m.family) for m in client.chat_models()]


ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]


def openai_chat_fn(link: Link, model: str, *, timeout: float, num_predict: int) -> ChatFn:
    """A blocking JSON-schema request (memory extraction outside a chat), as
    ollama_chat_fn is for Ollama."""
    from assistant.llm.openai_wire import OpenAIClient

    endpoint = link.endpoint()

    def chat(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        with OpenAIClient(endpoint, timeout) as client:
            return client.complete(model, list(messages), schema=schema,
                                   num_predict=num_predict, temperature=0.0)

    return chat


def openai_embed(link: Link, timeout: float) -> Callable[[str, Sequence[str]],
                                                       list[list[float]]]:
    """`(model, texts) -> vectors` over /v1/embeddings, for `openai:<model>` embedders."""
    from assistant.llm.openai_wire import OpenAIClient

    endpoint = link.endpoint()
    client = OpenAIClient(endpoint, timeout)

    def embed(model: str, texts: Sequence[str]) -> list[list[float]]:
        return client.embed(model, texts)

    return embed


def ollama_chat_fn(
    host: str,
    model: str,
    *,
    timeout: float = 60.0,
    keep_alive: str | None = None,
    num_ctx: int | Callable[[], int | None] | None = None,
    num_predict: int,
) -> ChatFn:
    """A ChatFn making OllamaClient.chat_json's request (the background JSON completion: no
    streaming, think off, the chat's num_ctx, a capped reply, no proxy). `num_ctx` may be a
    function, called on first use (it asks Ollama for the model's context length).
    `timeout` bounds the whole silent wait for the reply; failures are `OllamaError`s."""
    from assistant.llm.ollama_client import OllamaClient

    resolved: list[int | None] = []

    def context() -> int | None:
        if not resolved:
            resolved.append(num_ctx() if callable(num_ctx) else num_ctx)
        return resolved[0]

    def chat(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        size = context()
        with OllamaClient(host, timeout=timeout) as client:
            return client.chat_json(model, messages, schema, num_predict=num_predict,
                                    num_ctx=size, keep_alive=keep_alive)

    return chat
