"""The app's client for Ollama's HTTP API, with failures a user can act on.

Built on the wire layer `indexing/ollama_http.py` (URL shape, timeouts, no proxy, reply
checks), like every Ollama client in the app: this one covers what the app asks Ollama with a
blocking request (is it up, which models are pulled, a model's context length and
capabilities, embeddings, the background JSON completion of `chat_json`); the chat's streamed
turns go through assistant/llm/ollama_transport.py. `map_exception` turns what any Ollama
client raises — httpx, the wire layer, the `ollama` package, llama-index — into one
`OllamaError` hierarchy whose messages say what went wrong and how to fix it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from assistant.errors import UserError
from assistant.ollama_host import DEFAULT_HOST, host_origin, host_setting, normalize_host
from indexing import ollama_http as wire
from indexing.ollama_http import CONNECT_TIMEOUT, EMBED_BATCH, http_timeout

__all__ = ["CONNECT_TIMEOUT", "DEFAULT_HOST", "EMBED_BATCH", "http_timeout", "normalize_host"]


# --- errors -----------------------------------------------------------------------------------

class OllamaError(UserError):
    """Any failure talking to Ollama; the message and hint are meant for the user."""


class OllamaUnavailable(OllamaError):
    """Nothing answers at the configured host (not running, wrong host, went away)."""


class ModelNotFound(OllamaError):
    """The model is not pulled."""

    def __init__(self, message: str, hint: str | None = None, *, model: str = "") -> None:
        super().__init__(message, hint)
        self.model = model


class OllamaTimeout(OllamaError):
    """Ollama accepted the request but did not answer within the timeout."""


class OllamaProtocolError(OllamaError):
    """A reply that is not what Ollama sends: wrong content type, malformed JSON, cut off."""


class OllamaServerError(OllamaError):
    """Ollama answered with an error of its own (out of memory, runner crashed, bad request)."""

    def __init__(self, message: str, hint: str | None = None, *, status: int = 500) -> None:
        super().__init__(message, hint)
        self.status = status


def model_matches(requested: str, installed: str) -> bool:
    """Ollama's name resolution: `qwen3` is `qwen3:latest`."""
    def full(name: str) -> str:
        name = name.strip()
        return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"

    return full(requested) == full(installed)


def unavailable(host: str) -> OllamaUnavailable:
    return OllamaUnavailable(
        f"Ollama is not running at {host}{host_origin(host)}",
        f"start it with `ollama serve`, or check {host_setting(host)}",
    )


def model_not_found(model: str, host: str) -> ModelNotFound:
    return ModelNotFound(
        f"model {model!r} is not installed in Ollama at {host}",
        f"run `ollama pull {model}`",
        model=model,
    )


def timed_out(host: str, timeout: float | None) -> OllamaTimeout:
    after = f" within {timeout:g} s" if timeout else ""
    return OllamaTimeout(
        f"Ollama at {host} did not answer{after}",
        "the model may still be loading or the machine is busy; try again, or raise "
        "[ollama] timeout in `brain config edit`",
    )


def _from_status(status: int, error: str, host: str, model: str | None) -> OllamaError:
    if status == 404 and "model" in error and "not found" in error:
        name = model or _quoted_model(error) or "<model>"
        return model_not_found(name, host)
    if status == 404:
        return OllamaProtocolError(
            f"{host}{host_origin(host)} does not look like an Ollama server "
            f"(404: {error or 'not found'})",
            f"check {host_setting(host)}",
        )
    hint = "see Ollama's log (`journalctl -u ollama` or ~/.ollama/logs/server.log)"
    if "does not support" in error:
        hint = "choose another model with [ollama] model in `brain config edit`"
    return OllamaServerError(f"Ollama error ({status}): {error or 'no details'}", hint,
                             status=status)


def in_stream_error(error: str, host: str, model: str | None) -> OllamaError:
    """Ollama failed in the middle of a reply (it sends {"error": …} as a stream line; the
    ollama package reports it with status code -1, which means nothing to a user)."""
    if "model" in error and "not found" in error:
        return model_not_found(model or _quoted_model(error) or "<model>", host)
    return OllamaServerError(
        f"Ollama stopped with an error: {error or 'no details'}",
        "see Ollama's log (`journalctl -u ollama` or ~/.ollama/logs/server.log)",
        status=500,
    )


def _quoted_model(error: str) -> str | None:
    for quote in ('"', "'"):
        start = error.find(quote)
        end = error.find(quote, start + 1)
        if start != -1 and end > start:
            return error[start + 1:end]
    return None


def map_exception(
    exc: BaseException, host: str, model: str | None = None, *, timeout: float | None = None
) -> OllamaError | None:
    """The `OllamaError` for an exception raised while talking to Ollama, or None.

    Understands httpx errors, `ollama.ResponseError`, the `ConnectionError` the `ollama`
    package raises when nothing listens, and errors chained under another exception (as
    llama-index sometimes wraps them). None means the exception is not a transport or
    protocol failure — most likely a bug — and should propagate unchanged.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        mapped = _map_one(current, host, model, timeout)
        if mapped is not None:
            return mapped
        current = current.__cause__ or current.__context__
    return None


def _map_one(
    exc: BaseException, host: str, model: str | None, timeout: float | None
) -> OllamaError | None:
    if isinstance(exc, OllamaError):
        return exc
    if isinstance(exc, wire.StatusError):
        return _from_status(exc.status, exc.error, host, model)
    if isinstance(exc, wire.StreamError):
        return in_stream_error(exc.error, host, model)
    if isinstance(exc, wire.NotJSON):
        return OllamaProtocolError(
            f"{host}{exc.path} answered with {exc.content_type or 'no content type'}, "
            "not JSON — is this an Ollama server?",
            f"check {host_setting(host)}",
        )
    if isinstance(exc, wire.MalformedReply):
        return malformed(host, exc.path, exc.what)
    if isinstance(exc, httpx.ConnectTimeout):
        return OllamaUnavailable(
            f"Ollama at {host}{host_origin(host)} did not accept a connection",
            f"check that `ollama serve` is running and that {host_setting(host)} is right",
        )
    if isinstance(exc, httpx.TimeoutException):
        return timed_out(host, timeout)
    if isinstance(exc, httpx.ConnectError):
        return unavailable(host)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return OllamaUnavailable(
            f"Ollama at {host} closed the connection before finishing its reply",
            "Ollama may have crashed or restarted; check `ollama serve` and try again",
        )
    if isinstance(exc, httpx.HTTPStatusError):
        text = ""
        with contextlib.suppress(httpx.ResponseNotRead):
            text = exc.response.text
        return _from_status(exc.response.status_code, wire.error_text(text), host, model)
    if isinstance(exc, httpx.TransportError):
        return unavailable(host)
    try:
        import ollama  # the package llama-index's Ollama LLM is built on
    except ImportError:  # pragma: no cover - it is a dependency
        ollama = None  # type: ignore[assignment]  # a module or nothing: no common type
    if ollama is not None and isinstance(exc, ollama.ResponseError):
        if exc.status_code < 0:  # an {"error"} line inside a stream: no HTTP status to show
            return in_stream_error(str(exc.error), host, model)
        return _from_status(exc.status_code, str(exc.error), host, model)
    if isinstance(exc, ConnectionError) and "connect to Ollama" in str(exc):
        return unavailable(host)
    if isinstance(exc, (ConnectionRefusedError, ConnectionResetError)):
        return unavailable(host)
    if isinstance(exc, json.JSONDecodeError):
        return OllamaProtocolError(
            f"Ollama at {host} sent a malformed reply ({exc.msg})",
            f"check that {host_setting(host)} points at Ollama and not another service",
        )
    return None


# --- results ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ModelSummary:
    """One line of `ollama list`."""

    name: str
    size: int
    family: str
    parameter_size: str
    quantization: str
    modified_at: str


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What `ollama show` says about a model."""

    name: str
    context_length: int | None
    embedding_length: int | None
    family: str
    parameter_size: str
    quantization: str
    capabilities: tuple[str, ...]
    template: str = ""  # the chat template (`ollama show --template`)
    modelfile: str = ""

    @property
    def supports_tools(self) -> bool:
        return "tools" in self.capabilities

    @property
    def supports_thinking(self) -> bool:
        return "thinking" in self.capabilities

    @property
    def thinking_only(self) -> bool:
        """The model reasons whatever `think` says (see `thinking_only`)."""
        return thinking_only(self.capabilities, self.template, self.modelfile, self.family)

    @property
    def supports_chat(self) -> bool:
        # Ollama before 0.6 reported no capabilities; assume a chat model then.
        return not self.capabilities or "completion" in self.capabilities

    @property
    def supports_embedding(self) -> bool:
        return "embedding" in self.capabilities


# --- the client -------------------------------------------------------------------------------

class OllamaClient:
    """Blocking client for one Ollama host. Thread-safe; `close()` or use as a context manager."""

    def __init__(self, host: str = DEFAULT_HOST, timeout: float = 60.0,
                 *, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.host = normalize_host(host)
        self.timeout = timeout
        self._http = wire.sync_client(self.host, timeout, connect=connect_timeout)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OllamaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- api --------------------------------------------------------------------------------

    def version(self) -> str:
        data = self._request("GET", "/api/version")
        version = data.get("version")
        if not isinstance(version, str):
            raise self._malformed("/api/version", "no version")
        return version

    def is_up(self) -> bool:
        try:
            self.version()
        except OllamaError:
            return False
        return True

    def list_models(self) -> list[ModelSummary]:
        data = self._request("GET", "/api/tags")
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/tags", "no model list")
        out = []
        for item in models:
            if not isinstance(item, dict):
                raise self._malformed("/api/tags", "model entry is not an object")
            details = item.get("details") or {}
            out.append(ModelSummary(
                name=str(item.get("name") or item.get("model") or ""),
                size=int(item.get("size") or 0),
                family=str(details.get("family") or ""),
                parameter_size=str(details.get("parameter_size") or ""),
                quantization=str(details.get("quantization_level") or ""),
                modified_at=str(item.get("modified_at") or ""),
            ))
        return out

    def chat_models(self) -> list[ModelSummary]:
        """The installed models that can chat: /api/tags does not say (its entries carry no
        capabilities), so each is asked /api/show, whose `capabilities` list "completion" for
        a chat model and only "embedding" for an embedding model (ollama api/types.go
        ShowResponse, server/routes.go ShowHandler). One whose show fails is kept: the chat
        request will say what is wrong with it."""
        chat = []
        for summary in self.list_models():
            try:
                info = self.show(summary.name)
            except OllamaError:
                chat.append(summary)
                continue
            if info.supports_chat:
                chat.append(summary)
        return chat

    def has_model(self, model: str) -> bool:
        return any(model_matches(model, m.name) for m in self.list_models())

    def show(self, model: str) -> ModelInfo:
        data = self._request("POST", "/api/show", {"model": model}, model=model)
        info = data.get("model_info") or {}
        details = data.get("details") or {}
        if not isinstance(info, dict) or not isinstance(details, dict):
            raise self._malformed("/api/show", "model_info is not an object")
        arch = str(info.get("general.architecture") or "")
        return ModelInfo(
            name=model,
            context_length=_arch_int(info, arch, "context_length"),
            embedding_length=_arch_int(info, arch, "embedding_length"),
            family=str(details.get("family") or arch),
            parameter_size=str(details.get("parameter_size") or ""),
            quantization=str(details.get("quantization_level") or ""),
            capabilities=tuple(str(c) for c in data.get("capabilities") or ()),
            template=str(data.get("template") or ""),
            modelfile=str(data.get("modelfile") or ""),
        )

    def running(self) -> list[RunningModel]:
        """Models loaded right now (/api/ps) with the context size they were loaded with.
        Ollama answers only once a model being loaded is ready (its scheduler holds the
        runner while loading): give this client a short timeout to tell "loading"."""
        data = self._request("GET", "/api/ps")
        models = data.get("models")
        if not isinstance(models, list):
            raise self._malformed("/api/ps", "no model list")
        return [running_model(item) for item in models if isinstance(item, dict)]

    def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]:
        """Embeddings for `texts`, in order (batched; empty input → empty list)."""
        try:
            return wire.embed(self._http, model, texts)
        except (httpx.HTTPError, wire.WireError) as exc:
            raise self._mapped(exc, model) from exc

    def chat_json(self, model: str, messages: list[dict[str, str]], schema: dict[str, Any], *,
                  num_predict: int, num_ctx: int | None = None,
                  keep_alive: str | None = None) -> str:
        """One non-streamed /api/chat reply whose `format` is the JSON schema, as a background
        request should be: `think: false` (with a schema, even a thinking-only model then
        writes JSON at once), temperature 0, a capped reply; `num_ctx` should be the chat's
        (another value would reload the model). Returns the reply's content."""
        options: dict[str, Any] = {"temperature": 0, "num_predict": num_predict}
        if num_ctx:
            options["num_ctx"] = num_ctx
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "format": schema,
            "stream": False,
            "think": False,
            "options": options,
        }
        if keep_alive:
            body["keep_alive"] = keep_alive
        data = self._request("POST", "/api/chat", body, model=model)
        message = data.get("message")
        return str(message.get("content", "")) if isinstance(message, dict) else ""

    # --- plumbing ---------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                 *, model: str | None = None) -> dict[str, Any]:
        try:
            return wire.request(self._http, method, path, body)
        except (httpx.HTTPError, wire.WireError) as exc:
            raise self._mapped(exc, model) from exc

    def _mapped(self, exc: BaseException, model: str | None) -> OllamaError:
        return map_exception(exc, self.host, model, timeout=self.timeout) or OllamaError(
            f"request to Ollama at {self.host} failed: {exc}"
        )

    def _malformed(self, path: str, what: str) -> OllamaProtocolError:
        return malformed(self.host, path, what)


def malformed(host: str, path: str, what: str) -> OllamaProtocolError:
    return OllamaProtocolError(
        f"malformed reply from {host}{path}: {what}",
        f"check that {host_setting(host)} points at Ollama, and update Ollama if it is old",
    )


def _arch_int(info: dict[str, Any], arch: str, name: str) -> int | None:
    """`<arch>.<name>` from model_info. Other keys end the same way (YaRN-scaled models carry
    `<arch>.rope.scaling.original_context_length`), so the exact key comes first; without
    an architecture, the shortest key with that ending."""
    def ok(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value > 0

    if arch and ok(info.get(f"{arch}.{name}")):
        return int(info[f"{arch}.{name}"])
    keys = sorted((k for k in info if k.endswith(f".{name}") and ok(info[k])), key=len)
    return int(info[keys[0]]) if keys else None


def thinking_only(capabilities: Sequence[str], template: str, modelfile: str = "",
                  family: str = "") -> bool:
    """Whether a thinking model reasons even when asked not to. Ollama's switchable models
    (the first Qwen3, DeepSeek-R1 under newer templates) read `.Think`/`.IsThinkSet` in their
    template; the thinking-only Qwen3-2507 releases do not (their template always opens
    `<think>`) or use the `qwen3-thinking` parser; gpt-oss ignores `think: false`."""
    if "thinking" not in capabilities:
        return False
    if family.startswith("gptoss") or family.startswith("gpt-oss"):
        return True
    if "qwen3-thinking" in modelfile:
        return True
    if not template.strip():
        return False  # a built-in renderer we cannot read: assume it can be switched off
    return ".Think" not in template and "IsThinkSet" not in template


@dataclass(frozen=True, slots=True)
class RunningModel:
    """One line of `ollama ps`."""

    name: str
    context_length: int | None
    expires_at: str
    size_vram: int


def running_model(item: dict[str, Any]) -> RunningModel:
    context = item.get("context_length")
    return RunningModel(
        name=str(item.get("name") or item.get("model") or ""),
        context_length=context if isinstance(context, int) and context > 0 else None,
        expires_at=str(item.get("expires_at") or ""),
        size_vram=int(item.get("size_vram") or 0),
    )
