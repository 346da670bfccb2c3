"""A fake Ollama server for tests: a real HTTP server on 127.0.0.1 speaking Ollama's protocol.

Code under test talks to it over real sockets with the real clients (httpx, the `ollama`
package, llama-index's `Ollama` LLM), so protocol details — NDJSON streaming with chunked
transfer encoding, error bodies, status codes — are exercised exactly as against Ollama.

Scripting, per test::

    fake.add_model("llama3.2:1b", context_length=131072, capabilities=("completion",))
    fake.script_chat("Hello there")                  # streamed word by word
    fake.script_chat(["Hel", "lo"], chunk_delay=0.05)
    fake.script_chat(format_json={"facts": []})      # answer to a `format` request
    fake.script_chat(tool_calls=[{"name": "search", "arguments": {"q": "x"}}])
    fake.script_chat(fail=500, error="llama runner process has terminated")
    fake.script_chat("partial answer", disconnect_after=1)
    fake.script("/api/tags", delay=3)                # any endpoint can be slow or fail
    fake.stop(); fake.start()                        # Ollama goes down, comes back, same port

Scripts are consumed FIFO per endpoint; a script with `match=` only answers requests it
accepts (e.g. `match=lambda body: "format" in body` for a background extraction call).
Without a script, /api/chat and /api/generate echo the last user message, and `format`
requests get a minimal JSON instance of the requested schema. Requests are recorded in
`fake.requests`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OLLAMA_VERSION = "0.12.6"
DEFAULT_ERROR = "llama runner process has terminated: exit status 2"

_WORD = re.compile(r"\w+", re.UNICODE)
_CHUNK = re.compile(r"\s*\S+\s*|\s+")


def normalize_model(name: str) -> str:
    """Ollama's name resolution: `qwen3` means `qwen3:latest`."""
    name = name.strip()
    if name and ":" not in name.rsplit("/", 1)[-1]:
        return f"{name}:latest"
    return name


@dataclass(frozen=True, slots=True)
class FakeModel:
    name: str
    family: str = "qwen3"
    parameter_size: str = "4.0B"
    quantization_level: str = "Q4_K_M"
    context_length: int = 40960
    embedding_length: int = 2560
    capabilities: tuple[str, ...] = ("completion", "tools", "thinking")
    size: int = 2_497_293_931

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.name.encode()).hexdigest()

    def details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        }


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    body: Any  # parsed JSON (dict) when the body was JSON, else the raw text
    headers: dict[str, str]


@dataclass(slots=True)
class Script:
    """One scripted reply for one endpoint."""

    chunks: list[str] | None = None
    format_json: Any = None
    tool_calls: list[dict[str, Any]] | None = None
    thinking: str | None = None
    fail: int | None = None
    error: str | None = None
    error_after: int | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    disconnect_after: int | None = None
    done_reason: str = "stop"
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    raw_body: bytes | None = None
    content_type: str | None = None
    match: Callable[[dict[str, Any]], bool] | None = None


def _split_text(text: str) -> list[str]:
    """Word-sized deltas, whitespace kept, like a tokenizer's pieces."""
    return _CHUNK.findall(text) or [text]


def _short_hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=4).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(_WORD.findall(text)) * 1.3)) if text else 0


def deterministic_embedding(text: str, dimension: int) -> list[float]:
    """Bag-of-words hashing: texts sharing words get similar unit vectors."""
    vec = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dimension
        vec[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


def instance_of_schema(schema: Any) -> Any:
    """A minimal value that validates against a (simple) JSON schema."""
    if not isinstance(schema, dict):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return instance_of_schema(schema[key][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        required = schema.get("required", list(schema.get("properties", {})))
        props = schema.get("properties", {})
        return {k: instance_of_schema(props.get(k, {})) for k in required}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(kind)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The default backlog of 5 drops SYNs under a burst of parallel clients, which then
    # retry after a full second.
    request_queue_size = 128
    fake: FakeOllama


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive + chunked streaming, as Go's net/http does
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._track(self.connection, add=False)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            self.close_connection = True  # the client gave up (timeout, cancel): not our error
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        self.server.fake._dispatch(self, "GET")

    def do_HEAD(self) -> None:
        self.server.fake._dispatch(self, "HEAD")

    def do_POST(self) -> None:
        self.server.fake._dispatch(self, "POST")

    def do_DELETE(self) -> None:
        self.server.fake._dispatch(self, "DELETE")


class _Disconnect(Exception):
    """Abort the response and drop the connection (scripted, or the server is stopping)."""


class FakeOllama:
    """The fake server. `start()` binds a random loopback port; `url` is its base URL."""

    def __init__(self, *, models: Sequence[FakeModel] | None = None) -> None:
        self._lock = threading.RLock()
        self._models: dict[str, FakeModel] = {}
        for model in models if models is not None else self.default_models():
            self._models[model.name] = model
        self._scripts: dict[str, list[Script]] = {}
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._port = 0
        self.version = OLLAMA_VERSION

    @staticmethod
    def default_models() -> list[FakeModel]:
        """What a fresh install with the default chat model plus an embedder would list."""
        return [
            FakeModel("qwen3:4b"),
            FakeModel(
                "nomic-embed-text:latest",
                family="nomic-bert",
                parameter_size="137M",
                quantization_level="F16",
                context_length=2048,
                embedding_length=768,
                capabilities=("embedding",),
                size=274_302_450,
            ),
        ]

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    host = url

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> FakeOllama:
        """Listen (again) — on the same port as before after a `stop()`."""
        with self._lock:
            if self._server is not None:
                return self
            self._stopping.clear()
            deadline = time.monotonic() + 5
            while True:
                try:
                    server = _Server(("127.0.0.1", self._port), _Handler)
                    break
                except OSError:
                    # The old socket on this port may linger a moment after stop().
                    if self._port == 0 or time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
            server.fake = self
            self._port = server.server_address[1]
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"fake-ollama-{self._port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and drop open connections, like a killed `ollama serve`."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            connections = list(self._connections)
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # --- models ---------------------------------------------------------------------------

    def add_model(
        self,
        name: str,
        *,
        context_length: int = 40960,
        family: str = "qwen3",
        parameter_size: str = "4.0B",
        quantization_level: str = "Q4_K_M",
        embedding_length: int = 2560,
        capabilities: Sequence[str] = ("completion", "tools", "thinking"),
    ) -> FakeModel:
        model = FakeModel(
            normalize_model(name),
            family=family,
            parameter_size=parameter_size,
            quantization_level=quantization_level,
            context_length=context_length,
            embedding_length=embedding_length,
            capabilities=tuple(capabilities),
        )
        with self._lock:
            self._models[model.name] = model
        return model

    def remove_model(self, name: str) -> None:
        with self._lock:
            self._models.pop(normalize_model(name), None)

    def clear_models(self) -> None:
        with self._lock:
            self._models.clear()

    @property
    def models(self) -> list[FakeModel]:
        with self._lock:
            return list(self._models.values())

    def _model(self, name: str) -> FakeModel | None:
        with self._lock:
            return self._models.get(normalize_model(name))

    # --- scripting ------------------------------------------------------------------------

    def script(self, path: str, reply: str | Sequence[str] | None = None, **options: Any) -> Script:
        """Queue a reply for `path` (e.g. "/api/chat"); see `Script` for the options."""
        chunks: list[str] | None
        if reply is None:
            chunks = None
        elif isinstance(reply, str):
            chunks = _split_text(reply)
        else:
            chunks = list(reply)
        entry = Script(chunks=chunks, **options)
        with self._lock:
            self._scripts.setdefault(path, []).append(entry)
        return entry

    def script_chat(self, reply: str | Sequence[str] | None = None, **options: Any) -> Script:
        """Queue a /api/chat reply: text (split into word deltas) or explicit chunks.

        Options: format_json (answer to `format` requests; dict/list are JSON-encoded),
        tool_calls ([{"name", "arguments"}]), thinking, fail (HTTP status) + error (message),
        error_after (N chunks then an in-stream {"error"}), delay (before the first byte),
        chunk_delay, disconnect_after (N chunks then drop the connection), done_reason
        (e.g. "length"), prompt_eval_count/eval_count (token counts), raw_body/content_type
        (send these bytes verbatim), match (predicate on the body)."""
        return self.script("/api/chat", reply, **options)

    def script_generate(self, reply: str | Sequence[str] | None = None, **options: Any) -> Script:
        return self.script("/api/generate", reply, **options)

    def script_embed(self, **options: Any) -> Script:
        return self.script("/api/embed", None, **options)

    def pending_scripts(self, path: str | None = None) -> int:
        with self._lock:
            if path is not None:
                return len(self._scripts.get(path, []))
            return sum(len(v) for v in self._scripts.values())

    def _next_script(self, path: str, body: Any) -> Script | None:
        with self._lock:
            queue = self._scripts.get(path, [])
            for i, entry in enumerate(queue):
                if entry.match is None or (isinstance(body, dict) and entry.match(body)):
                    return queue.pop(i)
        return None

    # --- recorded requests ----------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the /api/chat requests received so far."""
        return [r.body for r in self.requests_to("/api/chat")]

    def last_chat(self) -> dict[str, Any]:
        bodies = self.chat_requests
        if not bodies:
            raise AssertionError("the fake Ollama received no /api/chat request")
        return bodies[-1]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def wait_for_requests(self, path: str, count: int = 1, timeout: float = 5.0) -> None:
        """Block until `count` requests reached `path` (for work done in background threads)."""
        deadline = time.monotonic() + timeout
        while len(self.requests_to(path)) < count:
            if time.monotonic() > deadline:
                got = len(self.requests_to(path))
                raise AssertionError(f"expected {count} request(s) to {path}, got {got}")
            time.sleep(0.01)

    # --- request handling -----------------------------------------------------------------

    def _pause(self, seconds: float) -> None:
        if seconds > 0 and self._stopping.wait(seconds):
            raise _Disconnect

    def _dispatch(self, h: _Handler, method: str) -> None:
        path = h.path.split("?", 1)[0]
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body, bad_json = raw.decode("utf-8", "replace"), True
        with self._lock:
            self._requests.append(RecordedRequest(method, path, body, dict(h.headers.items())))
        try:
            self._route(h, method, path, body, bad_json)
        except _Disconnect:
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)

    def _route(self, h: _Handler, method: str, path: str, body: Any, bad_json: bool) -> None:
        routes: dict[tuple[str, str], Callable[..., None]] = {
            ("GET", "/"): self._root,
            ("HEAD", "/"): self._root,
            ("GET", "/api/version"): self._version,
            ("GET", "/api/tags"): self._tags,
            ("GET", "/api/ps"): self._ps,
            ("POST", "/api/show"): self._show,
            ("POST", "/api/chat"): self._chat,
            ("POST", "/api/generate"): self._generate,
            ("POST", "/api/embed"): self._embed,
            ("POST", "/api/embeddings"): self._embeddings,
        }
        handler = routes.get((method, path))
        if handler is None:
            self._send(h, 404, b"404 page not found", "text/plain")
            return
        if bad_json:
            self._error(h, 400, "invalid character looking for beginning of value")
            return
        if body is None:
            body = {}
        if not isinstance(body, dict):
            self._error(h, 400, "json: cannot unmarshal into Go value of type api.Request")
            return
        script = self._next_script(path, body)
        if script is not None:
            self._pause(script.delay)
            if script.raw_body is not None:
                self._send(h, script.fail or 200, script.raw_body,
                           script.content_type or "text/plain")
                return
            if script.fail is not None:
                self._error(h, script.fail, script.error or DEFAULT_ERROR)
                return
        handler(h, body, script or Script())

    # --- responses ------------------------------------------------------------------------

    def _send(self, h: _Handler, status: int, data: bytes, content_type: str) -> None:
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Date", h.date_time_string())
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)
        h.wfile.flush()

    def _json(self, h: _Handler, status: int, obj: Any) -> None:
        self._send(h, status, json.dumps(obj).encode(), "application/json; charset=utf-8")

    def _error(self, h: _Handler, status: int, message: str) -> None:
        self._json(h, status, {"error": message})

    def _not_found(self, h: _Handler, name: str) -> None:
        # Exactly Ollama's wording (server/routes.go), which clients and users recognise.
        self._error(h, 404, f'model "{name}" not found, try pulling it first')

    def _stream(self, h: _Handler, objects: Iterator[Any], script: Script) -> None:
        """NDJSON over chunked transfer encoding; honours chunk_delay / disconnect_after."""
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Date", h.date_time_string())
        h.end_headers()
        h.wfile.flush()
        for sent, obj in enumerate(objects):
            if sent and script.chunk_delay:
                self._pause(script.chunk_delay)
            if script.disconnect_after is not None and sent >= script.disconnect_after:
                raise _Disconnect
            data = json.dumps(obj).encode() + b"\n"
            h.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            h.wfile.flush()
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

    def _root(self, h: _Handler, body: Any, script: Script) -> None:
        self._send(h, 200, b"Ollama is running", "text/plain; charset=utf-8")

    def _version(self, h: _Handler, body: Any, script: Script) -> None:
        self._json(h, 200, {"version": self.version})

    def _tags(self, h: _Handler, body: Any, script: Script) -> None:
        models = [
            {
                "name": m.name,
                "model": m.name,
                "modified_at": "2025-10-01T12:00:00.000000000Z",
                "size": m.size,
                "digest": m.digest,
                "details": m.details(),
            }
            for m in self.models
        ]
        self._json(h, 200, {"models": models})

    def _ps(self, h: _Handler, body: Any, script: Script) -> None:
        self._json(h, 200, {"models": []})

    def _show(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        name = str(body.get("model") or body.get("name") or "")
        if not name:
            self._error(h, 400, "model is required")
            return
        model = self._model(name)
        if model is None:
            self._error(h, 404, f"model '{name}' not found")
            return
        arch = model.family
        self._json(h, 200, {
            "license": "Apache License 2.0",
            "modelfile": f"# Modelfile generated by \"ollama show\"\nFROM {model.name}\n",
            "parameters": "temperature 0.6\ntop_k 20\ntop_p 0.95",
            "template": "{{ .Prompt }}",
            "details": model.details(),
            "model_info": {
                "general.architecture": arch,
                "general.basename": arch,
                "general.file_type": 15,
                "general.parameter_count": 4_022_468_096,
                f"{arch}.context_length": model.context_length,
                f"{arch}.embedding_length": model.embedding_length,
                f"{arch}.block_count": 36,
            },
            "capabilities": list(model.capabilities),
            "modified_at": "2025-10-01T12:00:00.000000000Z",
        })

    def _check_model(self, h: _Handler, body: dict[str, Any], what: str) -> FakeModel | None:
        name = str(body.get("model") or "")
        if not name:
            self._error(h, 400, "model is required")
            return None
        model = self._model(name)
        if model is None:
            self._not_found(h, name)
            return None
        if what in ("chat", "generate") and "completion" not in model.capabilities:
            self._error(h, 400, f'"{name}" does not support {what}')
            return None
        if body.get("tools") and "tools" not in model.capabilities:
            self._error(h, 400, f"registry.ollama.ai/library/{model.name} does not support tools")
            return None
        if body.get("think") and "thinking" not in model.capabilities:
            self._error(h, 400, f'"{name}" does not support thinking')
            return None
        return model

    def _answer(self, body: dict[str, Any], script: Script, prompt: str) -> list[str]:
        fmt = body.get("format")
        if fmt:
            value = script.format_json
            if value is None and script.chunks is None:
                value = instance_of_schema(fmt) if isinstance(fmt, dict) else {}
            if value is not None:
                text = value if isinstance(value, str) else json.dumps(value)
                return _split_text(text) if body.get("stream", True) else [text]
        if script.chunks is not None:
            return script.chunks
        if script.tool_calls:
            return []
        return _split_text(f"echo: {prompt}")

    def _final_stats(self, prompt: str, pieces: Sequence[str]) -> dict[str, Any]:
        return {
            "total_duration": 1_200_000_000,
            "load_duration": 50_000_000,
            "prompt_eval_count": _tokens(prompt),
            "prompt_eval_duration": 300_000_000,
            "eval_count": max(len(pieces), 1),
            "eval_duration": 800_000_000,
        }

    def _chat(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        model = self._check_model(h, body, "chat")
        if model is None:
            return
        messages = body.get("messages") or []
        if not messages:  # Ollama's "load the model" call
            self._reply(h, body, script, model, [], None, done_reason="load")
            return
        last_user = next(
            (str(m.get("content") or "") for m in reversed(messages)
             if isinstance(m, dict) and m.get("role") == "user"),
            "",
        )
        prompt_text = " ".join(
            str(m.get("content") or "") for m in messages if isinstance(m, dict)
        )
        pieces = self._answer(body, script, last_user)
        self._reply(h, body, script, model, pieces, prompt_text, done_reason=script.done_reason)

    def _generate(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        model = self._check_model(h, body, "generate")
        if model is None:
            return
        prompt = str(body.get("prompt") or "")
        if not prompt:
            self._reply(h, body, script, model, [], None, done_reason="load", generate=True)
            return
        pieces = self._answer(body, script, prompt)
        full_prompt = f"{body.get('system') or ''} {prompt}"
        self._reply(h, body, script, model, pieces, full_prompt,
                    done_reason=script.done_reason, generate=True)

    def _tool_calls(self, script: Script) -> list[dict[str, Any]]:
        calls = []
        for i, call in enumerate(script.tool_calls or []):
            function = call.get("function", call)
            calls.append({
                "id": call.get("id") or f"call_{i}_{_short_hash(repr(call))}",
                "function": {
                    "index": i,
                    "name": function["name"],
                    "arguments": function.get("arguments", {}),
                },
            })
        return calls

    def _reply(
        self,
        h: _Handler,
        body: dict[str, Any],
        script: Script,
        model: FakeModel,
        pieces: list[str],
        prompt: str | None,
        *,
        done_reason: str,
        generate: bool = False,
    ) -> None:
        stream = body.get("stream", True) is not False
        tool_calls = self._tool_calls(script) if body.get("tools") or script.tool_calls else []
        thinking = script.thinking if body.get("think") is not False else None
        stats = self._final_stats(prompt or "", pieces) if prompt is not None else {}
        if stats and script.prompt_eval_count is not None:
            stats["prompt_eval_count"] = script.prompt_eval_count
        if stats and script.eval_count is not None:
            stats["eval_count"] = script.eval_count

        def frame(content: str, *, thinking_delta: str | None = None,
                  calls: list[dict[str, Any]] | None = None, done: bool = False) -> dict[str, Any]:
            obj: dict[str, Any] = {"model": model.name, "created_at": _now()}
            if generate:
                obj["response"] = content
                if thinking_delta:
                    obj["thinking"] = thinking_delta
            else:
                message: dict[str, Any] = {"role": "assistant", "content": content}
                if thinking_delta:
                    message["thinking"] = thinking_delta
                if calls:
                    message["tool_calls"] = calls
                obj["message"] = message
            obj["done"] = done
            if done:
                obj["done_reason"] = done_reason
                if generate and prompt is not None:
                    obj["context"] = list(range(1, len(pieces) + 4))
                obj.update(stats)
            return obj

        if not stream:
            if script.disconnect_after is not None:
                raise _Disconnect
            final = frame("".join(pieces), thinking_delta=thinking, calls=tool_calls, done=True)
            self._json(h, 200, final)
            return

        def frames() -> Iterator[dict[str, Any]]:
            count = 0
            if thinking:
                for piece in _split_text(thinking):
                    yield frame("", thinking_delta=piece)
            for piece in pieces:
                if script.error_after is not None and count >= script.error_after:
                    yield {"error": script.error or DEFAULT_ERROR}
                    return
                yield frame(piece)
                count += 1
            if script.error_after is not None and count >= script.error_after:
                yield {"error": script.error or DEFAULT_ERROR}
                return
            if tool_calls and not generate:
                yield frame("", calls=tool_calls)
            yield frame("", done=True)

        self._stream(h, frames(), script)

    def _embed(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        model = self._check_model(h, body, "embed")
        if model is None:
            return
        inputs = body.get("input")
        if isinstance(inputs, str):
            texts = [inputs]
        elif isinstance(inputs, list) and all(isinstance(t, str) for t in inputs):
            texts = inputs
        elif inputs is None:
            texts = []
        else:
            self._error(h, 400, "invalid input type")
            return
        dimension = int(body.get("dimensions") or model.embedding_length)
        self._json(h, 200, {
            "model": model.name,
            "embeddings": [deterministic_embedding(t, dimension) for t in texts],
            "total_duration": 14_143_917,
            "load_duration": 1_019_500,
            "prompt_eval_count": sum(_tokens(t) for t in texts),
        })

    def _embeddings(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        model = self._check_model(h, body, "embed")
        if model is None:
            return
        prompt = str(body.get("prompt") or "")
        self._json(h, 200, {"embedding": deterministic_embedding(prompt, model.embedding_length)})

