"""The OpenAI-compatible wire format, over httpx: the one client for such a server.

Plain httpx with the documented format rather than the `openai` package: httpx is already
loaded for Ollama, and the package's import alone costs more than this whole module (measured
in the README, "OpenAI-compatible servers"). What is sent, per generic option:
num_predict → max_tokens, num_ctx → nothing (the server's context is set where it starts),
format (a JSON schema) → response_format {type: json_schema}, temperature as is; streams ask
for `stream_options.include_usage` so the last chunk carries the token counts.

Streams are Server-Sent Events: `data: {json}` lines separated by a blank line, ended by
`data: [DONE]` (OpenAI, llama.cpp's llama-server, vLLM, LM Studio; llama-cpp-python frames
lines with CRLF). A chunk's `choices[0].delta` has `content`, reasoning as `reasoning_content`
(llama.cpp, DeepSeek, vLLM) or `reasoning` (Ollama's /v1, newer vLLM), and `tool_calls`
fragments keyed by `index` whose `arguments` arrive as pieces of one JSON text.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from assistant.llm import openai_errors as oe

CONNECT_TIMEOUT = 3.0
EMBED_BATCH = 64


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str  # up to /v1, no trailing slash
    api_key: str | None = None
    key_env: str = ""  # named in hints about a refused key

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers


def normalize_base_url(url: str) -> str:
    return url.strip().rstrip("/")


@dataclass(frozen=True, slots=True)
class RemoteModel:
    """One entry of /v1/models; context_length when the server says (vLLM max_model_len,
    llama.cpp meta.n_ctx_train, LM Studio / others context_length)."""

    id: str
    context_length: int | None = None
    owned_by: str = ""


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def parse_models(data: Any) -> list[RemoteModel]:
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ValueError("no `data` list")
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        meta: dict[str, Any] = item["meta"] if isinstance(item.get("meta"), dict) else {}
        context = (_positive_int(item.get("max_model_len"))
                   or _positive_int(item.get("context_length"))
                   or _positive_int(meta.get("n_ctx"))
                   or _positive_int(meta.get("n_ctx_train")))
        out.append(RemoteModel(item["id"], context, str(item.get("owned_by") or "")))
    return out


def request_body(model: str, messages: list[dict[str, Any]], *, stream: bool,
                 temperature: float | None = None, num_predict: int | None = None,
                 schema: dict[str, Any] | None = None,
                 tools: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """A /v1/chat/completions body from the generic options."""
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if temperature is not None:
        body["temperature"] = temperature
    if num_predict is not None and num_predict > 0:
        body["max_tokens"] = num_predict
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema", "json_schema": {"name": "reply", "schema": schema},
        }
    if tools:
        body["tools"] = list(tools)
    return body


def json_object_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """The same request with the older schema form, `{type: json_object, schema}` — what
    llama-cpp-python's server accepts (it refuses `json_schema`: a 500 naming the field) and
    llama.cpp's llama-server also reads; None when the body asks for no schema."""
    current = body.get("response_format") or {}
    if current.get("type") != "json_schema":
        return None
    schema = (current.get("json_schema") or {}).get("schema")
    return {**body, "response_format": {"type": "json_object", "schema": schema}}


def refused_format(status: int, message: str) -> bool:
    """A refusal of response_format (not of the prompt): try the other form. A 400/422 from a
    server validating the body itself; a 500 from llama-cpp-python, whose route handler turns
    its own validation error into an internal error that names the field
    (llama_cpp/server/errors.py, error_message_wrapper)."""
    if status in (400, 422):
        return "response_format" in message or "json_object" in message or status == 422
    return status == 500 and "response_format" in message and "json_object" in message


# --- streaming ----------------------------------------------------------------------------------

@dataclass
class StreamEnd:
    """What the last chunks said: why it stopped, the counts, the tool calls."""

    finish_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)  # llama.cpp's own, when sent
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Delta:
    content: str = ""
    reasoning: str = ""


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The `data:` payloads of an SSE stream, one per event (multi-line data joined with
    newlines, comments and other fields skipped), until `[DONE]` or the end."""
    parts: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if parts:
                payload = "\n".join(parts)
                parts = []
                if payload.strip() == "[DONE]":
                    return
                yield payload
            continue
        if line.startswith(":"):
            continue  # a comment / keep-alive
        name, _, value = line.partition(":")
        if name == "data":
            parts.append(value[1:] if value.startswith(" ") else value)
    if parts and "\n".join(parts).strip() != "[DONE]":
        yield "\n".join(parts)


class ToolCallBuffer:
    """Tool-call fragments put back together: name once, arguments as pieces of JSON."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, str]] = {}

    def add(self, fragments: Any) -> None:
        for position, fragment in enumerate(fragments if isinstance(fragments, list) else []):
            if not isinstance(fragment, dict):
                continue
            index = fragment.get("index", position)
            call = self._calls.setdefault(index if isinstance(index, int) else position,
                                          {"name": "", "arguments": ""})
            function = fragment.get("function") or {}
            if isinstance(function.get("name"), str):
                call["name"] += function["name"]
            if isinstance(function.get("arguments"), str):
                call["arguments"] += function["arguments"]
            elif isinstance(function.get("arguments"), dict):  # some servers send an object
                call["arguments"] += json.dumps(function["arguments"])

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        out = []
        for _, call in sorted(self._calls.items()):
            try:
                arguments = json.loads(call["arguments"]) if call["arguments"].strip() else {}
            except ValueError:
                arguments = {}
            out.append((call["name"], arguments if isinstance(arguments, dict) else {}))
        return [c for c in out if c[0]]


def read_chunk(data: dict[str, Any], end: StreamEnd, tools: ToolCallBuffer) -> Delta:
    """One parsed SSE chunk: its text, and what it tells about the end (kept in `end`)."""
    if isinstance(data.get("usage"), dict):
        end.usage = data["usage"]
    if isinstance(data.get("timings"), dict):
        end.timings = data["timings"]
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Delta()  # the usage-only last chunk has `choices: []`
    choice = choices[0]
    if isinstance(choice.get("finish_reason"), str):
        end.finish_reason = choice["finish_reason"]
    delta = choice.get("delta") or choice.get("message") or {}
    if not isinstance(delta, dict):
        return Delta()
    if delta.get("tool_calls"):
        tools.add(delta["tool_calls"])
    reasoning = delta.get("reasoning_content") or delta.get("reasoning") or ""
    content = delta.get("content") or ""
    return Delta(content if isinstance(content, str) else "",
                 reasoning if isinstance(reasoning, str) else "")


def ollama_style_stats(end: StreamEnd) -> dict[str, Any]:
    """The end of a stream in the keys the engine reads from Ollama's last chunk, so one
    piece of code records the counts for every provider: done_reason, prompt_eval_count
    (the whole prompt, cache included, as Ollama counts it), eval_count, prompt_eval_duration
    (ns, llama.cpp's timings.prompt_ms: reading the uncached part), cached_tokens."""
    raw: dict[str, Any] = {"done_reason": end.finish_reason or "stop"}
    usage, timings = end.usage, end.timings
    if _positive_int(usage.get("prompt_tokens")) is not None:
        raw["prompt_eval_count"] = usage["prompt_tokens"]
    if isinstance(usage.get("completion_tokens"), int):
        raw["eval_count"] = usage["completion_tokens"]
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if not isinstance(cached, int) and isinstance(timings.get("cache_n"), int):
        cached = timings["cache_n"]
    if isinstance(cached, int):
        raw["cached_tokens"] = cached
    if isinstance(timings.get("prompt_ms"), int | float):
        raw["prompt_eval_duration"] = int(timings["prompt_ms"] * 1_000_000)
    if isinstance(timings.get("predicted_ms"), int | float):
        raw["eval_duration"] = int(timings["predicted_ms"] * 1_000_000)
    return raw


# --- the blocking client (catalog, doctor, embeddings, CLI extraction) ------------------------

class RefusedFormat(Exception):
    """The server refused `json_schema`; `retry` is the request in the older form."""

    def __init__(self, retry: dict[str, Any]) -> None:
        super().__init__("response_format json_schema refused")
        self.retry = retry


class OpenAIClient:
    """Blocking client for one OpenAI-compatible server. Thread-safe; close() when done.
    Raises ChatError (chat/errors.py) for every failure."""

    def __init__(self, endpoint: Endpoint, timeout: float = 60.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            headers=endpoint.headers(),
            # A local server: a proxy from the environment must never see the prompts.
            trust_env=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post_or_get(self, method: str, path: str, body: dict[str, Any] | None = None,
                     *, model: str = "") -> Any:
        url = f"{self.endpoint.base_url}{path}"
        try:
            response = self._http.request(method, url, json=body)
        except httpx.HTTPError as exc:
            raise self._mapped(exc, model) from exc
        if response.status_code >= 400:
            message = oe.error_text(response.text)
            retry = json_object_format(body) if body is not None else None
            if retry is not None and refused_format(response.status_code, response.text):
                raise RefusedFormat(retry)
            raise oe.from_status(response.status_code, message,
                                 base_url=self.endpoint.base_url, model=model,
                                 key_env=self.endpoint.key_env)
        try:
            return response.json()
        except ValueError as exc:
            raise oe.protocol(f"{path} answered with something other than JSON",
                              self.endpoint.base_url) from exc

    def _mapped(self, exc: BaseException, model: str) -> Exception:
        return oe.from_exception(exc, base_url=self.endpoint.base_url, model=model,
                                 key_env=self.endpoint.key_env, timeout=self.timeout)

    def models(self) -> list[RemoteModel]:
        data = self._post_or_get("GET", "/models")
        try:
            return parse_models(data)
        except ValueError as exc:
            raise oe.protocol(f"/models: {exc}", self.endpoint.base_url) from exc

    def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]:
        """Embeddings in input order (each batch re-sorted by `index`)."""
        out: list[list[float]] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = list(texts[start:start + EMBED_BATCH])
            data = self._post_or_get("POST", "/embeddings", {"model": model, "input": batch},
                                     model=model)
            items = data.get("data") if isinstance(data, dict) else None
            if not isinstance(items, list) or len(items) != len(batch):
                raise oe.protocol("/embeddings: wrong number of vectors", self.endpoint.base_url)
            ordered = sorted(items, key=lambda item: item.get("index", 0)
                             if isinstance(item, dict) else 0)
            for item in ordered:
                vector = item.get("embedding") if isinstance(item, dict) else None
                if not isinstance(vector, list) or not vector:
                    raise oe.protocol("/embeddings: an entry has no vector",
                                      self.endpoint.base_url)
                out.append([float(x) for x in vector])
        return out

    def complete(self, model: str, messages: list[dict[str, Any]], *,
                 schema: dict[str, Any] | None = None, num_predict: int | None = None,
                 temperature: float = 0.0) -> str:
        """One non-streamed reply's content (background JSON requests from the CLI)."""
        body = request_body(model, messages, stream=False, temperature=temperature,
                            num_predict=num_predict, schema=schema)
        try:
            data = self._post_or_get("POST", "/chat/completions", body, model=model)
        except RefusedFormat as refused:
            data = self._post_or_get("POST", "/chat/completions", refused.retry, model=model)
        end = StreamEnd()
        if isinstance(data, dict) and data.get("error"):
            raise oe.from_status(500, oe.payload_error(data), base_url=self.endpoint.base_url,
                                 model=model, key_env=self.endpoint.key_env)
        delta = read_chunk(data if isinstance(data, dict) else {}, end, ToolCallBuffer())
        return delta.content
