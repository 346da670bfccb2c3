"""A fake OpenAI-compatible server for tests: real HTTP on 127.0.0.1, the wire format of
llama.cpp's `llama-server` (tools/server/server.cpp) and the OpenAI API reference.

What it does as those servers do, not kinder:
- `GET /v1/models`: `{"object": "list", "data": [{"id", "object": "model", "owned_by",
  "meta": {"n_ctx_train", …}}]}` (llama-server adds `meta`; others do not, `meta=False`).
- `POST /v1/chat/completions` with `stream: true`: Server-Sent Events, each `data: {json}`
  followed by a blank line — the first chunk's delta carries `role`, then `content` (or
  `reasoning_content` for reasoning, llama-server's `--reasoning-format deepseek`; or
  `reasoning`, Ollama's /v1) pieces, then a chunk with an empty delta and `finish_reason`
  ("stop", "length" at `max_tokens`, "tool_calls"); with `stream_options.include_usage` one
  more chunk with `choices: []`, `usage` (`prompt_tokens`, `completion_tokens`,
  `prompt_tokens_details.cached_tokens`) and llama-server's `timings` (prompt_n, prompt_ms,
  predicted_n, predicted_ms, cache_n); then `data: [DONE]`. Without include_usage, no usage
  (llama-server since ggml-org/llama.cpp#16052). `crlf=True` frames lines with CRLF as
  llama-cpp-python's server (sse-starlette) does.
- Tool calls stream as `delta.tool_calls[{index, id, type, function: {name, arguments}}]`,
  the arguments JSON cut into pieces across chunks.
- Non-streamed: one `chat.completion` with `message`, `finish_reason` and `usage`.
- `response_format: {type: json_schema, json_schema: {schema}}`: the reply is scripted JSON or
  a minimal instance of the schema.
- Errors as llama-server sends them: `{"error": {"code", "message", "type"}}` — 401 with a
  wrong or missing key (when `api_key` is set), 404 for an unknown model, 400
  `exceed_context_size_error` when the prompt is longer than `n_ctx`.
- The prompt cache: like llama-server's slot, it keeps the previous request's prompt and
  reuses the longest common prefix (counted in whole messages, tokens as the Ollama fake
  counts them); `cached_tokens` reports it.
- A client that closes the stream is noticed (`fake.disconnects`) and generation stops.

Scripting: `fake.script_chat("Hello", chunk_delay=0.05, reasoning="Hmm", tool_calls=[…],
json={…}, fail=500, error="…", match=lambda body: …)`; unscripted chat requests echo the
first paragraph of the last user message. `fake.requests` records every request.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_ollama import deterministic_embedding, instance_of_schema
from tests.fake_ollama_runtime import count_tokens

DEFAULT_MODEL = "smollm2-135m-instruct"


@dataclass
class FakeModel:
    id: str
    n_ctx: int = 8192
    embedding_dim: int | None = None  # an embedding model when set


@dataclass
class Script:
    reply: str | Sequence[str] | None = None
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    tool_calls: Sequence[dict[str, Any]] = ()
    json: Any = None
    chunk_delay: float = 0.0
    first_delay: float = 0.0
    fail: int | None = None
    error: str = ""
    error_type: str = "server_error"
    in_stream_error: bool = False
    disconnect_after: int | None = None
    end_after: int | None = None  # end the HTTP response cleanly after N pieces, unfinished
    cap: int | None = None  # the server's own limit (its -n / n_predict): "length" past it
    match: Callable[[dict[str, Any]], bool] | None = None


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    fake: FakeOpenAI


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        self.server.fake._dispatch(self, "GET")

    def do_POST(self) -> None:
        self.server.fake._dispatch(self, "POST")


class _Gone(Exception):
    pass


def _pieces(text: str) -> list[str]:
    """Word-by-word deltas, spaces kept, as a tokenizer's pieces would arrive."""
    out: list[str] = []
    for word in text.split(" "):
        out.append(word if not out else " " + word)
    return [p for p in out if p]


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    calls = json.dumps(message.get("tool_calls")) if message.get("tool_calls") else ""
    return f"{message.get('role', '')}: {content or ''}{calls}"


class FakeOpenAI:
    def __init__(self, *, models: Sequence[FakeModel] | None = None,
                 api_key: str | None = None, meta: bool = True, crlf: bool = False,
                 include_timings: bool = True, json_object_only: bool = False) -> None:
        self.models = list(models) if models is not None else [FakeModel(DEFAULT_MODEL),
                                                              FakeModel("nomic-embed", 2048, 32)]
        self.api_key = api_key
        self.meta = meta
        self.crlf = crlf
        self.include_timings = include_timings
        # llama-cpp-python's server: response_format is {type: "text"|"json_object", schema}
        # (llama_types.ChatCompletionRequestResponseFormat); json_schema fails validation.
        self.json_object_only = json_object_only
        # llama-cpp-python's server (settings.interrupt_requests, on by default): any new
        # request ends the completion being streamed.
        self.interrupt_requests = False
        self._streaming = 0
        self._interrupted = False
        self.requests: list[Recorded] = []
        self.disconnects = 0
        self.generations: list[dict[str, int]] = []  # prompt, cached, completion tokens
        self._scripts: list[Script] = []
        self._cache: list[str] = []  # the slot's previous prompt, message by message
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._port = 0

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", self._port), _Handler)
        server.fake = self
        self._port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True,
                         name="fake-openai").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL as a user configures it: up to /v1."""
        return f"http://127.0.0.1:{self._port}/v1"

    # --- scripting --------------------------------------------------------------------------

    def script_chat(self, reply: str | Sequence[str] | None = None, **options: Any) -> Script:
        script = Script(reply, **options)
        with self._lock:
            self._scripts.append(script)
        return script

    def _next_script(self, body: dict[str, Any]) -> Script | None:
        with self._lock:
            for i, script in enumerate(self._scripts):
                if script.match is None or script.match(body):
                    return self._scripts.pop(i)
        return None

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path == "/v1/chat/completions"]

    def wait_for_disconnect(self, count: int = 1, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while self.disconnects < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} disconnect(s), saw {self.disconnects}")
            time.sleep(0.01)

    # --- serving ----------------------------------------------------------------------------

    def _dispatch(self, handler: _Handler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self.requests.append(Recorded(method, handler.path, body, dict(handler.headers)))
        if self.interrupt_requests and self._streaming:
            self._interrupted = True
        if self.api_key is not None and (
                handler.headers.get("Authorization") != f"Bearer {self.api_key}"):
            self._error(handler, 401, "Invalid API Key", "authentication_error")
            return
        route = (method, handler.path)
        if route == ("GET", "/v1/models"):
            self._json(handler, 200, self._models())
        elif route == ("POST", "/v1/chat/completions") and isinstance(body, dict):
            self._chat(handler, body)
        elif route == ("POST", "/v1/embeddings") and isinstance(body, dict):
            self._embeddings(handler, body)
        else:
            self._error(handler, 404, "File Not Found", "not_found_error")

    def _models(self) -> dict[str, Any]:
        data = []
        for m in self.models:
            item: dict[str, Any] = {"id": m.id, "object": "model", "created": 0,
                                    "owned_by": "llamacpp"}
            if self.meta:
                item["meta"] = {"n_ctx_train": m.n_ctx, "n_vocab": 49152}
            data.append(item)
        return {"object": "list", "data": data}

    def _model(self, name: Any) -> FakeModel | None:
        return next((m for m in self.models if m.id == name), None)

    def _json(self, handler: _Handler, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _error(self, handler: _Handler, status: int, message: str, kind: str,
               **extra: Any) -> None:
        self._json(handler, status, {"error": {"code": status, "message": message,
                                               "type": kind, **extra}})

    def _embeddings(self, handler: _Handler, body: dict[str, Any]) -> None:
        model = self._model(body.get("model"))
        if model is None or model.embedding_dim is None:
            self._error(handler, 404, f"model {body.get('model')!r} not found",
                        "invalid_request_error")
            return
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [{"object": "embedding", "index": i,
                 "embedding": deterministic_embedding(str(t), model.embedding_dim)}
                for i, t in enumerate(texts)]
        data.reverse()  # the API pairs vectors with inputs by `index`, not by order
        self._json(handler, 200, {"object": "list", "data": data, "model": model.id,
                                  "usage": {"prompt_tokens": 0, "total_tokens": 0}})

    def _chat(self, handler: _Handler, body: dict[str, Any]) -> None:
        model = self._model(body.get("model"))
        if model is None:
            self._error(handler, 404, f"The model `{body.get('model')}` does not exist",
                        "invalid_request_error")
            return
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        prompt_parts = [_message_text(m) for m in messages]
        prompt_tokens = sum(count_tokens(p) for p in prompt_parts)
        if prompt_tokens > model.n_ctx:
            self._error(handler, 400, "the request exceeds the available context size, try "
                        "increasing it", "exceed_context_size_error",
                        n_prompt_tokens=prompt_tokens, n_ctx=model.n_ctx)
            return
        response_format = body.get("response_format") or {}
        if self.json_object_only and response_format.get("type") not in (None, "text",
                                                                        "json_object"):
            # As llama-cpp-python 0.3.36 answers (seen on the real server): its route handler
            # catches the body's validation error and wraps it as a 500.
            self._json(handler, 500, {"error": {
                "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                           "'response_format', 'type'), 'msg': \"Input should be 'text' or "
                           "'json_object'\", 'input': 'json_schema', 'ctx': {'expected': "
                           "\"'text' or 'json_object'\"}}",
                "type": "internal_server_error", "param": None, "code": None}})
            return
        script = self._next_script(body)
        if script is not None and script.fail is not None and not script.in_stream_error:
            self._error(handler, script.fail, script.error or "scripted failure",
                        script.error_type)
            return
        cached = self._reuse(prompt_parts)
        reasoning, pieces, calls = self._reply(body, messages, script)
        limit = body.get("max_tokens")
        if script is not None and script.cap is not None:
            limit = min(script.cap, limit) if isinstance(limit, int) else script.cap
        finish = "tool_calls" if calls else "stop"
        if isinstance(limit, int) and limit > 0 and len(pieces) > limit:
            pieces, finish = pieces[:limit], "length"
        counts = {"prompt": prompt_tokens, "cached": cached, "completion": len(pieces),
                  "sent": 0}
        self.generations.append(counts)
        if body.get("stream"):
            self._streaming += 1
            self._interrupted = False
            try:
                with contextlib.suppress(_Gone, OSError):
                    self._stream(handler, body, script, reasoning, pieces, calls, finish,
                                 counts)
            finally:
                self._streaming -= 1
        else:
            message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
            if reasoning:
                message["reasoning_content"] = reasoning
            self._json(handler, 200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                "model": model.id, "choices": [{"index": 0, "message": message,
                                                "finish_reason": finish}],
                "usage": self._usage(counts)})

    def _reuse(self, prompt_parts: list[str]) -> int:
        cached = 0
        for previous, part in zip(self._cache, prompt_parts, strict=False):
            if previous != part:
                break
            cached += count_tokens(part)
        self._cache = list(prompt_parts)
        return cached

    def _reply(self, body: dict[str, Any], messages: list[dict[str, Any]],
               script: Script | None) -> tuple[str, list[str], list[dict[str, Any]]]:
        response_format = body.get("response_format") or {}
        schema = (response_format.get("json_schema") or {}).get("schema") or (
            response_format.get("schema"))
        if script is not None and script.json is not None:
            return script.reasoning, [json.dumps(script.json)], []
        if script is not None and (script.reply is not None or script.tool_calls):
            reply = script.reply or ""
            pieces = list(reply) if not isinstance(reply, str) else _pieces(reply)
            return script.reasoning, pieces, list(script.tool_calls)
        if schema is not None:
            return "", [json.dumps(instance_of_schema(schema))], []
        last: dict[str, Any] = next(
            (m for m in reversed(messages) if m.get("role") == "user"), {})
        text = str(last.get("content") or "").strip().split("\n\n", 1)[0]
        return (script.reasoning if script else ""), _pieces(text or "(empty)"), []

    def _usage(self, counts: dict[str, int]) -> dict[str, Any]:
        return {"prompt_tokens": counts["prompt"], "completion_tokens": counts["completion"],
                "total_tokens": counts["prompt"] + counts["completion"],
                "prompt_tokens_details": {"cached_tokens": counts["cached"]}}

    def _stream(self, handler: _Handler, body: dict[str, Any], script: Script | None,
                reasoning: str, pieces: list[str], calls: list[dict[str, Any]], finish: str,
                counts: dict[str, int]) -> None:
        newline = "\r\n" if self.crlf else "\n"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        started = time.monotonic()

        def event(data: Any) -> None:
            if self._interrupted:  # the response ends, unfinished
                handler.wfile.write(b"0\r\n\r\n")
                raise _Gone
            text = data if isinstance(data, str) else json.dumps(data)
            frame = f"data: {text}{newline}{newline}".encode()
            if self._client_left(handler):
                raise _Gone
            try:
                handler.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                handler.wfile.flush()
            except OSError:
                self.disconnects += 1
                raise _Gone from None

        def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
            return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}

        delay = script.chunk_delay if script else 0.0
        if script is not None and script.first_delay:
            self._sleep(handler, script.first_delay)
        event(chunk({"role": "assistant", "content": None}))
        field_name = script.reasoning_field if script else "reasoning_content"
        for piece in _pieces(reasoning) if reasoning else []:
            event(chunk({field_name: piece}))
            self._sleep(handler, delay)
        for sent, piece in enumerate(pieces):
            if script is not None and script.disconnect_after is not None and (
                    sent >= script.disconnect_after):
                handler.close_connection = True
                with contextlib.suppress(OSError):
                    handler.connection.shutdown(2)
                return
            if script is not None and script.end_after is not None and (
                    sent >= script.end_after):
                handler.wfile.write(b"0\r\n\r\n")  # no finish_reason, no [DONE]
                return
            if script is not None and script.in_stream_error and sent == 1:
                event({"error": {"code": script.fail or 500, "message": script.error,
                                 "type": script.error_type}})
                handler.wfile.write(b"0\r\n\r\n")
                return
            event(chunk({"content": piece}))
            counts["sent"] = sent + 1
            self._sleep(handler, delay)
        for i, call in enumerate(calls):
            arguments = json.dumps(call.get("arguments", {}))
            half = len(arguments) // 2
            event(chunk({"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                                         "function": {"name": call["name"],
                                                      "arguments": arguments[:half]}}]}))
            event(chunk({"tool_calls": [{"index": i, "function": {
                "arguments": arguments[half:]}}]}))
        event(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                                     "created": 0, "model": body.get("model"), "choices": [],
                                     "usage": self._usage(counts)}
            if self.include_timings:
                elapsed = (time.monotonic() - started) * 1000
                usage["timings"] = {"cache_n": counts["cached"],
                                    "prompt_n": counts["prompt"] - counts["cached"],
                                    "prompt_ms": 1.0, "predicted_n": counts["completion"],
                                    "predicted_ms": round(elapsed, 3)}
            event(usage)
        event("[DONE]")
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def _client_left(self, handler: _Handler) -> bool:
        import select
        import socket

        try:
            poller = select.poll()
            poller.register(handler.connection, select.POLLIN)
            if poller.poll(0) and handler.connection.recv(1, socket.MSG_PEEK) == b"":
                self.disconnects += 1
                return True
        except (OSError, ValueError):
            self.disconnects += 1
            return True
        return False

    def _sleep(self, handler: _Handler, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._client_left(handler):
                raise _Gone
            time.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
