"""What goes wrong talking to an OpenAI-compatible server, as the chat's `ChatError` kinds.

The same kinds and the same kind of hint as the Ollama path (chat/errors.py), so the CLI and
the TUI need no second branch: nothing listening → unavailable, 404 naming the model →
model_not_found, 400 about the context → context_overflow, 401/403 → a hint about the key's
variable, a cut stream → dropped. Error bodies differ by server — OpenAI and llama.cpp send
{"error": {"message", "type"}}, vLLM {"object": "error", "message"}, some a bare string — and
`error_text` reads them all.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import httpx

from assistant.llm.errors import OPENAI_WORDS, ChatError, dropped


def error_text(body: str) -> str:
    """The server's own message from an error body (any of the shapes above)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:300]
    return payload_error(data) or body.strip()[:300]


def payload_error(data: Any) -> str:
    if isinstance(data, dict):
        error = data.get("error", data if data.get("object") == "error" else None)
        if isinstance(error, str):
            return error
        if isinstance(error, dict):
            return str(error.get("message") or error.get("type") or "")[:300]
        if isinstance(data.get("detail"), str):
            return str(data["detail"])[:300]
    return ""


def _is_overflow(text: str) -> bool:
    text = text.lower()
    return ("context" in text or "n_ctx" in text) and any(
        w in text for w in ("exceed", "too long", "length", "window", "maximum", "size"))


def key_hint(key_env: str) -> str:
    if key_env:
        return (f"check the key in ${key_env} (the variable named by llm.api_key_env), or "
                "llm.api_key_file")
    return "this server wants an API key: set llm.api_key_env (e.g. OPENAI_API_KEY) or " \
           "llm.api_key_file in `brain config edit`"


def from_status(status: int, message: str, *, base_url: str, model: str,
                key_env: str) -> ChatError:
    detail = message or f"HTTP {status}"
    if status in (401, 403):
        return ChatError("unavailable", f"{base_url} refused the API key ({status}: {detail})",
                         key_hint(key_env), retryable=False)
    if status == 404 and model and ("model" in detail.lower() or model in detail):
        return ChatError(
            "model_not_found", f"model {model!r} is not served at {base_url} ({detail})",
            "choose one of the models the server lists (`brain doctor` shows them) with "
            "llm.model, or load it in the server", retryable=False)
    if status == 404:
        return ChatError(
            "protocol", f"{base_url} does not look like an OpenAI-compatible API "
            f"(404: {detail})", "llm.base_url should end in /v1, e.g. http://127.0.0.1:8080/v1")
    if status in (400, 413, 422) and _is_overflow(detail):
        return ChatError(
            "context_overflow",
            f"the message does not fit in the model's context window: {detail}",
            "shorten the message, or start the server with a longer context (llama-server -c, "
            "vLLM --max-model-len) and raise ollama.context_window to match", retryable=False)
    if status == 429:
        return ChatError("server", f"{base_url} is busy or rate-limited (429: {detail})",
                         "wait a moment and retry")
    return ChatError("server", f"the model server at {base_url} failed ({status}: {detail})",
                     "see the server's log; retry")


def from_exception(exc: BaseException, *, base_url: str, model: str, key_env: str,
                   timeout: float, streaming: bool = False) -> ChatError:
    """The ChatError for what httpx raised (anything else: a protocol error, kept short)."""
    if isinstance(exc, ChatError):
        return exc
    if isinstance(exc, httpx.ConnectTimeout):
        return ChatError("unavailable", f"the model server at {base_url} did not accept a "
                         "connection", "check that it is running and llm.base_url is right")
    if isinstance(exc, httpx.TimeoutException):
        return ChatError("timeout", f"the model server at {base_url} did not answer within "
                         f"{timeout:g} s", "retry; if the machine is busy, raise ollama.timeout")
    if streaming and isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return dropped(partial=True, server=OPENAI_WORDS)
    if isinstance(exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError):
        return ChatError("unavailable", f"no model server answers at {base_url}",
                         "start it (e.g. `llama-server -m model.gguf --port 8080`) or fix "
                         "llm.base_url in `brain config edit`")
    if isinstance(exc, httpx.HTTPStatusError):
        text = ""
        with contextlib.suppress(httpx.ResponseNotRead):
            text = exc.response.text
        return from_status(exc.response.status_code, error_text(text), base_url=base_url,
                           model=model, key_env=key_env)
    if isinstance(exc, httpx.HTTPError):
        return ChatError("unavailable", f"request to {base_url} failed: {exc}",
                         "check llm.base_url and that the server is running")
    return protocol(f"{type(exc).__name__}: {str(exc)[:160]}", base_url)


def protocol(detail: str, base_url: str) -> ChatError:
    return ChatError(
        "protocol", f"{base_url} sent a reply second-brain cannot read ({detail})",
        "check that llm.base_url points at an OpenAI-compatible server (`curl URL/models`)")
