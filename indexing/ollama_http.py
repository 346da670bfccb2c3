"""Ollama's HTTP API on the wire: the one place that knows a host's URL shape, how long to
wait, that no proxy is ever used, and what a well-formed reply looks like.

Every Ollama client is built from here: `assistant/llm/ollama_client.OllamaClient` (model
facts, the background JSON completion, embeddings), the chat transport's async client
(`assistant/llm/ollama_transport`) and `indexing/embedders/ollama.OllamaModel`. It lives in
`indexing/` because the embedder may not import `assistant/`; it knows nothing of config files
or user-facing wording. Failures leave as httpx errors or the `WireError`s below, and each
caller words them once: `assistant/llm/ollama_client.map_exception` for the app,
`EmbeddingModelError` for the embedder.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # httpx costs ~0.14 s to import: the config (normalize_host) must not pay it
    import httpx

DEFAULT_HOST = "http://localhost:11434"
DEFAULT_PORT = 11434
# Connecting to a local Ollama either succeeds at once or is refused; a long wait means a
# firewalled or wrong host, which should not eat the whole request timeout.
CONNECT_TIMEOUT = 3.0
EMBED_BATCH = 128  # /api/embed inputs per request


def normalize_host(host: str | None) -> str:
    """Resolve a host the way the `ollama` CLI does.

    `myhost` / `myhost:1234` / `0.0.0.0` (no scheme) are plain Ollama addresses: http, port
    11434 unless given. With a scheme the URL is taken as written (`https://ollama.lan` is port
    443, e.g. behind a reverse proxy). `0.0.0.0` means "listen everywhere" to the server; a
    client must use loopback instead.
    """
    host = (host or "").strip() or DEFAULT_HOST
    if "://" not in host:
        authority, sep, path = host.partition("/")
        if not _has_port(authority):
            authority = f"{authority}:{DEFAULT_PORT}"
        host = f"http://{authority}{sep}{path}"
    host = host.replace("://0.0.0.0", "://127.0.0.1").replace("://[::]", "://[::1]")
    return host.rstrip("/")


def _has_port(authority: str) -> bool:
    # "[::1]:9000" has a port, "[::1]" has none; an IPv6 address alone has many colons.
    if authority.startswith("["):
        return "]:" in authority
    return authority.count(":") == 1


def http_timeout(timeout: float, *, first_byte: float | None = None,
                 connect: float = CONNECT_TIMEOUT) -> httpx.Timeout:
    """httpx timeouts for Ollama: connecting fails fast (a local server accepts at once or
    refuses); reading may wait `first_byte` (the silent model load + prompt reading) when
    given — a backstop a little beyond it, the caller enforces the exact limits — else
    `timeout`."""
    import httpx

    read = first_byte + max(timeout, 5.0) if first_byte else timeout
    return httpx.Timeout(read, connect=connect, read=read, write=max(timeout, connect),
                         pool=connect)


def client_options(host: str | None, timeout: httpx.Timeout) -> dict[str, Any]:
    """What every HTTP client to Ollama is built with. `trust_env=False`: Ollama is local (or
    on the user's own network); HTTP(S)_PROXY / ALL_PROXY must never see a prompt, nor break
    every request when the proxy is down."""
    return {"base_url": normalize_host(host), "timeout": timeout, "trust_env": False,
            "headers": {"Accept": "application/json"}}


def sync_client(host: str | None, timeout: float, *,
                connect: float = CONNECT_TIMEOUT) -> httpx.Client:
    """A blocking client for one host; a request waits at most `timeout` for its reply."""
    import httpx

    return httpx.Client(**client_options(
        host, http_timeout(timeout, connect=min(timeout, connect))))


def async_client(host: str | None, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """An async client for one host (one per event loop: an httpx async client must not
    outlive or cross its loop)."""
    import httpx

    return httpx.AsyncClient(**client_options(host, timeout))


# --- replies ----------------------------------------------------------------------------------

class WireError(Exception):
    """Ollama answered, but not with what was asked for."""


class StatusError(WireError):
    """An HTTP error status; `error` is Ollama's own {"error": …} text (or the body's start)."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(f"{status}: {error}")
        self.status = status
        self.error = error


class StreamError(WireError):
    """Ollama failed in the middle of a streamed reply: it sends {"error": …} as a line."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


class MalformedReply(WireError):
    """A reply of the right status that is not what Ollama sends for `path`."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}")
        self.path = path
        self.what = what


class NotJSON(MalformedReply):
    """The reply is not JSON at all: most likely another service listens at the host."""

    def __init__(self, path: str, content_type: str) -> None:
        super().__init__(path, f"answered with {content_type or 'no content type'}")
        self.content_type = content_type


def error_text(body: str) -> str:
    """Ollama's error message from an error body ({"error": "…"}), else the body's start."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:200]
    if isinstance(data, dict) and isinstance(error := data.get("error"), str):
        return error
    return body.strip()[:200]


def reply_object(response: httpx.Response, path: str) -> dict[str, Any]:
    """The JSON object of a complete (non-streamed) reply; raises StatusError / NotJSON /
    MalformedReply."""
    if response.status_code >= 400:
        raise StatusError(response.status_code, error_text(response.text))
    content_type = response.headers.get("content-type", "")
    if "json" not in content_type:
        raise NotJSON(path, content_type)
    try:
        data = response.json()
    except ValueError as exc:
        raise MalformedReply(path, "invalid JSON") from exc
    if not isinstance(data, dict):
        raise MalformedReply(path, "not a JSON object")
    return data


def request(client: httpx.Client, method: str, path: str,
            body: dict[str, Any] | None = None) -> dict[str, Any]:
    """One blocking request to `path` (relative to the client's host) → the reply object."""
    return reply_object(client.request(method, path, json=body), path)


async def arequest(client: httpx.AsyncClient, method: str, path: str,
                   body: dict[str, Any] | None = None) -> dict[str, Any]:
    """`request` on an async client."""
    return reply_object(await client.request(method, path, json=body), path)


async def stream(client: httpx.AsyncClient, path: str,
                 body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
    """A streamed reply's lines (Ollama streams one JSON object per line). Closing the
    iterator — or cancelling the task reading it — closes the connection, which makes Ollama
    stop generating. A line that is not JSON raises json.JSONDecodeError."""
    async with client.stream("POST", path, json=body) as response:
        if response.status_code >= 400:
            text = (await response.aread()).decode("utf-8", "replace")
            raise StatusError(response.status_code, error_text(text))
        async for line in response.aiter_lines():
            if not line.strip():
                continue
            part = json.loads(line)
            if not isinstance(part, dict):
                raise MalformedReply(path, "a stream line is not a JSON object")
            if error := part.get("error"):
                raise StreamError(str(error))
            yield part


def chat_body(model: str, messages: Sequence[dict[str, Any]], *, stream: bool,
              options: dict[str, Any], keep_alive: str | None = None,
              think: bool | None = None, schema: dict[str, Any] | None = None,
              tools: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """An /api/chat request as the `ollama` package sent it (the chat's requests went through
    it until issue 24, and Ollama caches the prompt prefix by what it renders from them):
    empty message fields left out, `tools` always a list, unset fields absent."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{k: v for k, v in m.items() if v} for m in messages],
        "tools": list(tools),
        "stream": stream,
        "options": options,
    }
    for key, value in (("keep_alive", keep_alive), ("think", think), ("format", schema)):
        if value is not None:
            body[key] = value
    return body


def embed(client: httpx.Client, model: str, texts: Sequence[str], *,
          batch: int = EMBED_BATCH) -> list[list[float]]:
    """/api/embed: one vector per text, in order, all of one length (empty input → [])."""
    out: list[list[float]] = []
    for start in range(0, len(texts), batch):
        part = list(texts[start:start + batch])
        data = request(client, "POST", "/api/embed",
                       {"model": model, "input": part, "truncate": True})
        vectors = data.get("embeddings")
        if (not isinstance(vectors, list) or len(vectors) != len(part)
                or not all(isinstance(v, list) and v for v in vectors)):
            raise MalformedReply("/api/embed", "wrong number of embeddings")
        if len({len(v) for v in vectors}) > 1 or (out and len(vectors[0]) != len(out[0])):
            raise MalformedReply("/api/embed", "embeddings of different lengths")
        if not all(_is_number(x) for v in vectors for x in v):
            raise MalformedReply("/api/embed", "an embedding holds a value that is not a number")
        out.extend([float(x) for x in v] for v in vectors)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
