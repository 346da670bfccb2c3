"""A fake Ollama server for tests: a real HTTP server on 127.0.0.1 speaking Ollama's protocol.

Code under test talks to it over real sockets with the real clients (httpx, the `ollama`
package, llama-index's `Ollama` LLM), so protocol details — NDJSON streaming with chunked
transfer encoding, error bodies, status codes — are exercised exactly as against Ollama.

It behaves like the real server, not a kinder one (tests/fake_ollama_runtime.py lists each rule
with the ollama/ollama source it follows): the default `qwen3:4b` is the thinking-only
Qwen3-2507 — `think` absent streams its reasoning in `message.thinking`, `think: false` puts
untagged reasoning and `</think>` in `content`; nothing is sent before the first token (load +
prompt reading happen in silence, and a client leaving aborts them); one request at a time per
model; another `options.num_ctx` reloads the model; the prompt cache is the longest common
prefix; an over-long prompt loses old messages, then its middle; `num_predict` cuts the reply
with `done_reason: "length"`. Delays are zero unless a `FakeTiming` says otherwise.

Scripting, per test::

    fake.add_model("llama3.2:1b", context_length=131072, capabilities=("completion",))
    fake.script_chat("Hello there")                  # streamed word by word
    fake.script_chat(["Hel", "lo"], chunk_delay=0.05)
    fake.script_chat("Answer", thinking="Hmm…")      # the model's reasoning ("" = none)
    fake.script_chat(format_json={"facts": []})      # answer to a `format` request
    fake.script_chat(tool_calls=[{"name": "search", "arguments": {"q": "x"}}])
    fake.script_chat(fail=500, error="llama runner process has terminated")
    fake.script_chat("partial answer", disconnect_after=1)
    fake.script("/api/tags", delay=3)                # any endpoint can be slow or fail
    fake.timing = FakeTiming.cpu(scale=0.01)         # load, prompt reading, generation delays
    fake.stop(); fake.start()                        # Ollama goes down, comes back, same port

Scripts are consumed FIFO per endpoint; a script with `match=` only answers requests it
accepts (e.g. `match=lambda body: "format" in body` for a background extraction call).
Without a script, /api/chat and /api/generate echo the first paragraph of the last user
message; a memory extraction request (the app's schema) gets one memory restated from the
first "I …" statement of its user turns (tests/fake_extraction.py: a real model finds one too,
so a broken pipeline fails), other `format` requests a minimal JSON instance of the requested
schema. Requests
are recorded in `fake.requests`; what the server did in `fake.loads`, `fake.generations`
(prompt tokens, cached, evaluated, truncation) and `fake.disconnects`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_extraction import default_extraction, is_extraction
from tests.fake_ollama_runtime import (
    DEFAULT_NUM_CTX,
    REASONING_STYLES,
    Disconnect,
    FakeTiming,
    Generation,
    Load,
    Runner,
    Scheduler,
    TokenRatio,
    cap_pieces,
    common_prefix,
    count_tokens,
    default_reasoning,
    fit_prompt,
    prefill_for,
    reasoning_route,
    tokenize,
)

__all__ = [
    "DEFAULT_ERROR", "OLLAMA_VERSION", "Disconnect", "FakeModel", "FakeOllamaServer", "FakeTiming",
    "Generation", "Load", "RecordedRequest", "Script", "chat_turn", "deterministic_embedding",
    "instance_of_schema", "normalize_model",
]

OLLAMA_VERSION = "0.12.6"
DEFAULT_ERROR = "llama runner process has terminated: exit status 2"

_WORD = re.compile(r"\w+", re.UNICODE)
_CHUNK = re.compile(r"\s*\S+\s*|\s+")
_POLL = 0.01  # how often a waiting request checks that its client is still there


def normalize_model(name: str) -> str:
    """Ollama's name resolution: `qwen3` means `qwen3:latest`."""
    name = name.strip()
    if name and ":" not in name.rsplit("/", 1)[-1]:
        return f"{name}:latest"
    return name


# Chat templates as `ollama show` prints them, by reasoning style. What matters to clients:
# a switchable thinking model's template reads .Think/.IsThinkSet (Qwen3's /think, /no_think);
# the thinking-only 2507 template ignores `think` and always opens <think>.
_QWEN_HEAD = (
    "{{- if .Messages }}{{- if or .System .Tools }}<|im_start|>system\n{{- if .System }}\n"
    "{{ .System }}\n{{- end }}{{- if .Tools }}\n\n# Tools\n<tools>\n{{- range .Tools }}\n"
    "{\"type\": \"function\", \"function\": {{ .Function }}}\n{{- end }}\n</tools>{{- end }}"
    "<|im_end|>\n{{ end }}{{- range $i, $_ := .Messages }}{{- $last := eq (len (slice "
    "$.Messages $i)) 1 -}}"
)
TEMPLATES: dict[str, str] = {
    "always": _QWEN_HEAD + (
        "{{- if eq .Role \"user\" }}<|im_start|>user\n{{ .Content }}<|im_end|>\n"
        "{{ else if eq .Role \"assistant\" }}<|im_start|>assistant\n{{ .Content }}"
        "{{ if not $last }}<|im_end|>\n{{ end }}{{ end }}"
        "{{- if and (ne .Role \"assistant\") $last }}<|im_start|>assistant\n<think>\n"
        "{{ end }}{{- end }}{{- end }}"
    ),
    "hybrid": _QWEN_HEAD + (
        "{{- if eq .Role \"user\" }}<|im_start|>user\n{{ .Content }}"
        "{{- if and $.IsThinkSet (eq $i $lastUserIdx) }}{{- if $.Think }} /think"
        "{{- else }} /no_think{{- end }}{{- end }}<|im_end|>\n"
        "{{ else if eq .Role \"assistant\" }}<|im_start|>assistant\n"
        "{{- if (and $.IsThinkSet (and .Thinking $.Think)) -}}<think>{{ .Thinking }}</think>"
        "{{ end }}{{ .Content }}{{ if not $last }}<|im_end|>\n{{ end }}{{ end }}"
        "{{- if and (ne .Role \"assistant\") $last }}<|im_start|>assistant\n"
        "{{- if and $.IsThinkSet (not $.Think) -}}<think>\n\n</think>\n\n{{ end }}"
        "{{ end }}{{- end }}{{- end }}"
    ),
    "mandatory": (
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
        "OpenAI.\nReasoning: {{- if .ThinkLevel }} {{ .ThinkLevel }}{{ else }} medium{{ end }}"
        "\n# Valid channels: analysis, commentary, final.<|end|>{{- range .Messages }}"
        "<|start|>{{ .Role }}<|message|>{{ .Content }}<|end|>{{- end }}<|start|>assistant"
    ),
    "inline": (
        "{{- range $i, $_ := .Messages }}{{- if eq .Role \"user\" }}<｜User｜>{{ .Content }}"
        "{{- else if eq .Role \"assistant\" }}<｜Assistant｜>{{ .Content }}<｜end▁of▁sentence｜>"
        "{{- end }}{{- end }}<｜Assistant｜>"
    ),
    "none": (
        "<|start_header_id|>system<|end_header_id|>\n\n{{ if .System }}{{ .System }}{{ end }}"
        "<|eot_id|>{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n"
        "{{ .Content }}<|eot_id|>{{- end }}<|start_header_id|>assistant<|end_header_id|>\n\n"
    ),
}


@dataclass(frozen=True, slots=True)
class FakeModel:
    name: str
    family: str = "qwen3"
    parameter_size: str = "4.0B"
    quantization_level: str = "Q4_K_M"
    context_length: int = 262144
    embedding_length: int = 2560
    capabilities: tuple[str, ...] = ("completion", "tools", "thinking")
    size: int = 2_497_293_931
    reasoning: str = "always"  # see fake_ollama_runtime.REASONING_STYLES
    tokens: TokenRatio | None = None  # None: the default stand-in tokenizer

    def tokenize(self, text: str) -> list[str]:
        return self.tokens.tokenize(text) if self.tokens is not None else tokenize(text)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.name.encode()).hexdigest()

    @property
    def template(self) -> str:
        return TEMPLATES.get(self.reasoning, TEMPLATES["none"])

    def details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": self.family,
            "families": [self.family],
            "parameter_size": self.parameter_size,
            "quantization_level": self.quantization_level,
        }

    def model_info(self) -> dict[str, Any]:
        """What `ollama show` returns in model_info for a GGUF model: many keys besides the
        context length, some of which also end in `context_length` (YaRN-scaled models carry
        the original training length), and the tokenizer arrays as null when not verbose."""
        arch = self.family
        info: dict[str, Any] = {
            "general.architecture": arch,
            "general.basename": self.name.split(":")[0],
            "general.file_type": 15,
            "general.finetune": "Thinking" if self.reasoning == "always" else "Instruct",
            "general.license": "apache-2.0",
            "general.parameter_count": 4_022_468_096,
            "general.quantization_version": 2,
            "general.size_label": self.parameter_size.replace(".0", ""),
            "general.type": "model",
            f"{arch}.attention.head_count": 32,
            f"{arch}.attention.head_count_kv": 8,
            f"{arch}.attention.key_length": 128,
            f"{arch}.attention.layer_norm_rms_epsilon": 1e-06,
            f"{arch}.block_count": 36,
            f"{arch}.context_length": self.context_length,
            f"{arch}.embedding_length": self.embedding_length,
            f"{arch}.feed_forward_length": 9728,
            f"{arch}.rope.freq_base": 5_000_000,
            "tokenizer.ggml.add_bos_token": False,
            "tokenizer.ggml.bos_token_id": 151643,
            "tokenizer.ggml.eos_token_id": 151645,
            "tokenizer.ggml.merges": None,
            "tokenizer.ggml.model": "gpt2",
            "tokenizer.ggml.pre": "qwen2",
            "tokenizer.ggml.token_type": None,
            "tokenizer.ggml.tokens": None,
        }
        if self.context_length > 32768:
            info[f"{arch}.rope.scaling.original_context_length"] = 32768
            info[f"{arch}.rope.scaling.type"] = "yarn"
        return info


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
    thinking: str | None = None  # the model's reasoning; None = its default, "" = none
    fail: int | None = None
    error: str | None = None
    error_after: int | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    hold: threading.Event | None = None
    disconnect_after: int | None = None
    done_reason: str = "stop"
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    raw_body: bytes | None = None
    content_type: str | None = None
    match: Callable[[dict[str, Any]], bool] | None = None


def chat_turn(body: object) -> bool:
    """`match=` for a script meant for the app's chat turns: a request with messages that is
    neither the preload (no messages), nor a background job (a JSON `format`), nor the cache
    warm-up that has Ollama read the conversation's opening (one generated token)."""
    if not isinstance(body, dict):
        return False  # an empty or non-JSON body (a client cut off mid-request) is no turn
    options = body.get("options") if isinstance(body.get("options"), dict) else {}
    return (bool(body.get("messages")) and not body.get("format")
            and (options or {}).get("num_predict") != 1)


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


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].strip()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The default backlog of 5 drops SYNs under a burst of parallel clients, which then
    # retry after a full second.
    request_queue_size = 128
    fake: FakeOllamaServer


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


class _ClientGone(Exception):
    """The client closed its connection while the fake was working on its request."""

    def __init__(self, phase: str, chunk: int = 0) -> None:
        super().__init__(phase)
        self.phase = phase
        self.chunk = chunk


def _client_gone(conn: socket.socket) -> bool:
    """The peer closed the connection (a readable socket with nothing to read). A client says
    nothing else while it waits for a reply, so readable means EOF or an error."""
    try:
        # poll, not select: select() refuses descriptors above 1023 (FD_SETSIZE), and a
        # refusal here read as "the client left" and dropped every request of a long run.
        poller = select.poll()
        poller.register(conn, select.POLLIN | select.POLLPRI)
        if not poller.poll(0):
            return False
        return conn.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


@dataclass(slots=True)
class _Reply:
    """What one chat/generate request produces: reasoning, content pieces, how it ends."""

    thinking: list[str] = field(default_factory=list)  # message.thinking deltas
    content: list[str] = field(default_factory=list)  # message.content deltas
    done_reason: str = "stop"


class FakeOllamaServer:
    """The fake server. `start()` binds a random loopback port; `url` is its base URL."""

    def __init__(self, *, models: Sequence[FakeModel] | None = None,
                 timing: FakeTiming | None = None) -> None:
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
        self._sched = Scheduler()
        self.timing = timing or FakeTiming()
        self.version = OLLAMA_VERSION

    @staticmethod
    def default_models() -> list[FakeModel]:
        """What a fresh install with the default chat model plus an embedder would list:
        `ollama pull qwen3:4b` gives the thinking-only Qwen3-4B-Thinking-2507."""
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
                reasoning="none",
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

    def start(self) -> FakeOllamaServer:
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
        """Stop listening and drop open connections, like a killed `ollama serve` (which also
        takes its loaded models with it)."""
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
        with self._sched.lock:
            self._sched.runners.clear()

    def __enter__(self) -> FakeOllamaServer:
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
        reasoning: str | None = None,
        tokens: TokenRatio | None = None,
    ) -> FakeModel:
        """Add a model; `reasoning` (see fake_ollama_runtime) defaults to "hybrid" for a model
        with the thinking capability (switchable, like the first Qwen3) and "none" otherwise;
        `tokens` makes its tokenizer split more or less than the default one (what
        `prompt_eval_count`, num_ctx and the prompt cache count)."""
        caps = tuple(capabilities)
        style = reasoning or ("hybrid" if "thinking" in caps else "none")
        if style not in REASONING_STYLES:
            raise ValueError(f"unknown reasoning style {style!r}")
        model = FakeModel(
            normalize_model(name),
            family=family,
            parameter_size=parameter_size,
            quantization_level=quantization_level,
            context_length=context_length,
            embedding_length=embedding_length,
            capabilities=caps,
            reasoning=style,
            tokens=tokens,
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
        tool_calls ([{"name", "arguments"}]), thinking (the model's reasoning: None = a
        default for thinking models, "" = none; where it lands depends on the model and
        `think`), fail (HTTP status) + error (message), error_after (N chunks then an in-stream
        {"error"}), delay (before the first byte), chunk_delay, hold (an Event: the prompt
        reading, silent and holding the model's slot, lasts until it is set), disconnect_after
        (N chunks then drop the connection), done_reason (e.g. "length"),
        prompt_eval_count/eval_count (token counts), raw_body/content_type (send these bytes
        verbatim), match (predicate on the body)."""
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

    # --- what happened --------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the /api/chat requests received so far, those that arrived whole: a
        client cut off between its headers and its body (a cancelled extraction, a quit) leaves
        a request with no body in `requests` — Ollama would answer it 400, and a test that
        filters bodies with `"format" in b` failed on that None under load."""
        return [r.body for r in self.requests_to("/api/chat") if isinstance(r.body, dict)]

    def chat_options(self) -> list[dict[str, Any]]:
        """`options` of every /api/chat request, in order ({} when absent)."""
        return [dict(b.get("options") or {}) for b in self.chat_requests]

    def last_chat(self) -> dict[str, Any]:
        bodies = self.chat_requests
        if not bodies:
            raise AssertionError("the fake Ollama received no /api/chat request")
        return bodies[-1]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()
        with self._sched.lock:
            self._sched.loads.clear()
            self._sched.generations.clear()
            self._sched.disconnects.clear()

    def wait_for_requests(self, path: str, count: int = 1, timeout: float = 5.0) -> None:
        """Block until `count` requests reached `path` (for work done in background threads)."""
        deadline = time.monotonic() + timeout
        while len(self.requests_to(path)) < count:
            if time.monotonic() > deadline:
                got = len(self.requests_to(path))
                raise AssertionError(f"expected {count} request(s) to {path}, got {got}")
            time.sleep(0.01)

    @property
    def loads(self) -> list[Load]:
        with self._sched.lock:
            return list(self._sched.loads)

    @property
    def reloads(self) -> int:
        """Loads caused by another num_ctx than the loaded runner's (each costs a full load)."""
        return sum(1 for load in self.loads if load.reason == "num_ctx" and not load.aborted)

    @property
    def generations(self) -> list[Generation]:
        with self._sched.lock:
            return list(self._sched.generations)

    @property
    def disconnects(self) -> list[Disconnect]:
        with self._sched.lock:
            return list(self._sched.disconnects)

    def loaded(self) -> dict[str, int]:
        """Loaded models and their num_ctx (what /api/ps reports), without waiting."""
        with self._sched.lock:
            return {n: r.num_ctx for n, r in self._sched.runners.items() if not r.loading}

    def busy(self) -> set[str]:
        """Models with a request in progress (holding their one slot)."""
        with self._sched.lock:
            return {n for n, slot in self._sched.slots.items() if slot.locked()}

    def loading(self) -> set[str]:
        """Models being loaded right now."""
        with self._sched.lock:
            return {n for n, r in self._sched.runners.items() if r.loading}

    def preload(self, model: str, num_ctx: int = DEFAULT_NUM_CTX) -> None:
        """Have `model` loaded at `num_ctx` already (as after an earlier session)."""
        started = self._sched.begin_load(normalize_model(model), num_ctx)
        if started is not None:
            runner, _reason = started
            self._sched.end_load(runner, ok=True)
            self._sched.release(runner, None)

    # --- request handling -----------------------------------------------------------------

    def _pause(self, seconds: float) -> None:
        if seconds > 0 and self._stopping.wait(seconds):
            raise _Disconnect

    def _wait(self, h: _Handler, seconds: float, phase: str, chunk: int = 0) -> None:
        """Sleep `seconds` while watching the client: raises _ClientGone when it leaves."""
        deadline = time.monotonic() + seconds
        while True:
            if _client_gone(h.connection):
                raise _ClientGone(phase, chunk)
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self._stopping.wait(min(left, _POLL)):
                raise _Disconnect

    def _hold(self, h: _Handler, event: threading.Event) -> None:
        """Wait, watching the client, until the test sets `event`: a prompt reading that lasts
        exactly as long as the test needs, not for a time guessed to be long enough."""
        while not event.wait(_POLL):
            if _client_gone(h.connection):
                raise _ClientGone("prompt")
            if self._stopping.is_set():
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
        except _ClientGone as gone:
            model = str(body.get("model") or "") if isinstance(body, dict) else ""
            with self._sched.lock:
                self._sched.disconnects.append(
                    Disconnect(path, normalize_model(model), gone.phase, gone.chunk))
            h.close_connection = True
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
        # server/routes.go PsHandler over sched.loadedModels(), which waits for a loading
        # runner: /api/ps does not answer while a model loads.
        runners = self._sched.loaded()
        out = []
        now = time.monotonic()
        for runner in runners:
            model = self._model(runner.model)
            if model is None:
                continue
            left = 10 * 365 * 86400.0 if runner.expires_at is None else runner.expires_at - now
            expires = datetime.now(UTC) + timedelta(seconds=left)
            out.append({
                "name": model.name, "model": model.name, "size": model.size,
                "digest": model.digest, "details": model.details(),
                "expires_at": expires.isoformat().replace("+00:00", "Z"),
                "size_vram": 0,  # CPU only
                "context_length": runner.num_ctx,
            })
        self._json(h, 200, {"models": out})

    def _show(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        name = str(body.get("model") or body.get("name") or "")
        if not name:
            self._error(h, 400, "model is required")
            return
        model = self._model(name)
        if model is None:
            self._error(h, 404, f"model '{name}' not found")
            return
        self._json(h, 200, {
            "license": "Apache License 2.0",
            "modelfile": (f"# Modelfile generated by \"ollama show\"\n# To build a new "
                          f"Modelfile based on this, replace FROM with:\n# FROM {model.name}\n\n"
                          f"FROM /usr/share/ollama/.ollama/models/blobs/sha256-{model.digest}\n"
                          f"TEMPLATE \"\"\"{model.template}\"\"\"\n"),
            "parameters": ("repeat_penalty                 1\nstop                           "
                           "\"<|im_start|>\"\nstop                           \"<|im_end|>\"\n"
                           "temperature                    0.6\ntop_k                          "
                           "20\ntop_p                          0.95"),
            "template": model.template,
            "details": model.details(),
            "model_info": model.model_info(),
            "tensors": [],
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

    # --- scheduling: queue, load, prompt reading ---------------------------------------------

    def _num_ctx(self, model: FakeModel, body: dict[str, Any]) -> int:
        options = body.get("options") or {}
        requested = options.get("num_ctx") if isinstance(options, dict) else None
        if not isinstance(requested, int) or isinstance(requested, bool) or requested <= 0:
            requested = DEFAULT_NUM_CTX
        # server/sched.go effectiveContext: never beyond what the model was trained for.
        return min(requested, model.context_length)

    @contextlib.contextmanager
    def _slot(self, h: _Handler, model: FakeModel) -> Iterator[None]:
        """One request at a time per model; a queued request whose client left is skipped."""
        slot = self._sched.slot(model.name)
        while not slot.acquire(timeout=_POLL):
            if self._stopping.is_set():
                raise _Disconnect
            if _client_gone(h.connection):
                raise _ClientGone("queued")
        try:
            yield
        finally:
            slot.release()

    def _runner(self, h: _Handler, model: FakeModel, num_ctx: int) -> tuple[Runner, float]:
        """The loaded runner at `num_ctx`, loading (or reloading) it first; the load time."""
        started = self._sched.begin_load(model.name, num_ctx)
        if started is None:
            runner = self._sched.runner(model.name)
            assert runner is not None
            return runner, 0.0
        runner, reason = started
        seconds = self.timing.load()
        ok = False
        try:
            self._wait(h, seconds, "loading")
            ok = True
        finally:
            self._sched.end_load(runner, ok=ok)
            with self._sched.lock:
                self._sched.loads.append(Load(model.name, num_ctx, reason, seconds,
                                              aborted=not ok))
        return runner, seconds

    # --- chat and generate ------------------------------------------------------------------

    def _chat(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        model = self._check_model(h, body, "chat")
        if model is None:
            return
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        self._complete(h, "/api/chat", body, script, model, messages)

    def _generate(self, h: _Handler, body: dict[str, Any], script: Script) -> None:
        model = self._check_model(h, body, "generate")
        if model is None:
            return
        prompt = str(body.get("prompt") or "")
        messages: list[dict[str, Any]] = []
        if body.get("system"):
            messages.append({"role": "system", "content": str(body["system"])})
        if prompt:
            messages.append({"role": "user", "content": prompt})
        self._complete(h, "/api/generate", body, script, model, messages, generate=True)

    def _complete(self, h: _Handler, path: str, body: dict[str, Any], script: Script,
                  model: FakeModel, messages: list[dict[str, Any]], *,
                  generate: bool = False) -> None:
        num_ctx = self._num_ctx(model, body)
        stream = body.get("stream", True) is not False
        keep_alive = body.get("keep_alive")
        with self._slot(h, model):
            if not messages and keep_alive is not None and keep_alive in (0, "0", "0s"):
                self._sched.unload(model.name)  # routes.go: empty request + keep_alive 0
                self._json(h, 200, self._frame(model, generate, "", done=True,
                                               done_reason="unload"))
                return
            runner, load_seconds = self._runner(h, model, num_ctx)
            try:
                if not messages:  # routes.go: "load the model" — one JSON object, not a stream
                    self._json(h, 200, self._frame(model, generate, "", done=True,
                                                   done_reason="load"))
                    return
                self._generate_reply(h, path, body, script, model, messages, runner,
                                     load_seconds, stream=stream, generate=generate)
            finally:
                self._sched.release(runner, keep_alive)

    def _reply_for(self, body: dict[str, Any], script: Script, model: FakeModel,
                   question: str) -> _Reply:
        """What the model writes, routed like the real server (see fake_ollama_runtime)."""
        think = body.get("think")
        route = reasoning_route(model.reasoning, think)
        fmt = body.get("format")
        reasoning = script.thinking
        if reasoning is None:
            reasoning = default_reasoning(question) if route != "none" else ""
        if route == "none":
            reasoning = ""
        if fmt and route in ("untagged", "inline"):
            reasoning = ""  # the schema constrains the reply from the first token
        options = body.get("options") if isinstance(body.get("options"), dict) else {}
        limit = options.get("num_predict") if isinstance(options, dict) else None
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        answer = self._answer(body, script, question)
        reply = _Reply(done_reason=script.done_reason)
        if route == "field":
            reply.thinking, cut = cap_pieces(_split_text(reasoning) if reasoning else [], limit)
            if cut and not fmt:
                reply.done_reason = "length"
                return reply  # the budget went on thinking: no answer at all
            reply.content, cut = cap_pieces(answer, limit)
        else:
            pieces = list(answer)
            if reasoning and route == "untagged":
                pieces = [*_split_text(reasoning), "\n</think>\n\n", *pieces]
            elif reasoning and route == "inline":
                pieces = ["<think>\n", *_split_text(reasoning), "\n</think>\n\n", *pieces]
            reply.content, cut = cap_pieces(pieces, limit)
        if cut:
            reply.done_reason = "length"
        return reply

    def _answer(self, body: dict[str, Any], script: Script, question: str) -> list[str]:
        fmt = body.get("format")
        if fmt:
            value = script.format_json
            if value is None and script.chunks is None and is_extraction(fmt):
                value = default_extraction(list(body.get("messages") or []))
            if value is None and script.chunks is None:
                value = instance_of_schema(fmt) if isinstance(fmt, dict) else {}
            if value is not None:
                text = value if isinstance(value, str) else json.dumps(value)
                return _split_text(text) if body.get("stream", True) else [text]
        if script.chunks is not None:
            return script.chunks
        if script.tool_calls:
            return []
        return _split_text(f"echo: {_first_paragraph(question)}")

    def _generate_reply(self, h: _Handler, path: str, body: dict[str, Any], script: Script,
                        model: FakeModel, messages: list[dict[str, Any]], runner: Runner,
                        load_seconds: float, *, stream: bool, generate: bool) -> None:
        think = body.get("think")
        tools = body.get("tools") if not generate else None
        prefill = prefill_for(model.reasoning, think)
        fitted = fit_prompt(messages, tools, prefill, runner.num_ctx, model.tokenize)
        cached = common_prefix(runner.cache, fitted.tokens)
        cached = min(cached, max(len(fitted.tokens) - 1, 0))  # the last token is always read
        evaluated = len(fitted.tokens) - cached
        question = next((str(m.get("content") or "") for m in reversed(messages)
                         if m.get("role") == "user"), "")
        reply = self._reply_for(body, script, model, question)
        calls = self._tool_calls(script) if (tools or script.tool_calls) and not generate else []
        record = Generation(
            path, model.name, runner.num_ctx, len(fitted.tokens), cached, evaluated,
            fitted.dropped_messages, fitted.cut_tokens, think, bool(body.get("format")),
            dict(body.get("options") or {}) if isinstance(body.get("options"), dict) else {},
            started=time.monotonic(),
        )
        # Prompt reading, in silence; the slot forgets its old content as soon as it starts.
        runner.cache = list(fitted.tokens[:cached])
        prompt_seconds = self.timing.prompt(evaluated)
        if script.hold is not None:
            self._hold(h, script.hold)
        self._wait(h, prompt_seconds, "prompt")
        runner.cache = list(fitted.tokens)
        output: list[str] = []
        sent = 0
        started = time.monotonic()

        def produced(piece: str) -> None:
            output.append(piece)
            runner.cache.extend(model.tokenize(piece))

        def stats() -> dict[str, Any]:
            eval_count = script.eval_count if script.eval_count is not None else max(
                sum(count_tokens(p) for p in output), 1)
            generated = time.monotonic() - started
            return {
                "total_duration": int((load_seconds + prompt_seconds + generated) * 1e9) + 1,
                "load_duration": int(load_seconds * 1e9) + 1,
                "prompt_eval_count": (script.prompt_eval_count
                                      if script.prompt_eval_count is not None
                                      else len(fitted.tokens)),
                "prompt_eval_duration": int(prompt_seconds * 1e9) + 1,
                # What Ollama's api.Metrics carries beside the whole prompt's count (omitempty:
                # only when some of it came from the cache); the `ollama` client library's
                # reply model drops it, as it does for the real server's.
                **({"prompt_eval_cached_count": cached}
                   if cached and script.prompt_eval_count is None else {}),
                "eval_count": eval_count,
                "eval_duration": int(generated * 1e9) + 1,
            }

        def finish(done_reason: str) -> None:
            with self._sched.lock:
                self._sched.generations.append(replace(
                    record, output_tokens=sum(count_tokens(p) for p in output),
                    done_reason=done_reason, finished=time.monotonic()))

        if not stream:
            if script.disconnect_after is not None:
                raise _Disconnect
            for i, piece in enumerate([*reply.thinking, *reply.content]):
                self._wait(h, self.timing.generate(count_tokens(piece)) +
                           (script.chunk_delay if i else 0.0), "prompt")
                produced(piece)
            final = self._frame(model, generate, "".join(reply.content),
                                thinking="".join(reply.thinking), calls=calls, done=True,
                                done_reason=reply.done_reason, stats=stats(),
                                context=len(fitted.tokens))
            finish(reply.done_reason)  # logged before the client can see the reply
            self._json(h, 200, final)
            return

        # (text produced, the NDJSON object, whether it counts as a content chunk for
        # disconnect_after/error_after: scripts count answer chunks, not reasoning)
        frames: list[tuple[str, dict[str, Any], bool]] = []
        for piece in reply.thinking:
            frames.append((piece, self._frame(model, generate, "", thinking=piece), False))
        for i, piece in enumerate(reply.content):
            if script.error_after is not None and i >= script.error_after:
                frames.append(("", {"error": script.error or DEFAULT_ERROR}, False))
                break
            frames.append((piece, self._frame(model, generate, piece), True))
        else:
            if script.error_after is not None and len(reply.content) >= script.error_after:
                frames.append(("", {"error": script.error or DEFAULT_ERROR}, False))
            elif calls and not generate:
                frames.append(("", self._frame(model, generate, "", calls=calls), True))
        headers_sent = False
        content_sent = 0
        try:
            for piece, obj, is_content in frames:
                self._wait(h, self.timing.generate(count_tokens(piece)) +
                           (script.chunk_delay if sent else 0.0),
                           "streaming" if headers_sent else "prompt", sent)
                if not headers_sent:
                    self._start_stream(h)
                    headers_sent = True
                if (is_content and script.disconnect_after is not None
                        and content_sent >= script.disconnect_after):
                    raise _Disconnect  # scripted: the server drops the stream mid-reply
                produced(piece)
                self._chunk(h, obj)
                sent += 1
                content_sent += is_content
                if "error" in obj:
                    finish("error")
                    self._end_stream(h)
                    return
            if sent and script.chunk_delay:
                self._wait(h, script.chunk_delay, "streaming", sent)
            if not headers_sent:
                self._start_stream(h)
            final = self._frame(model, generate, "", done=True, done_reason=reply.done_reason,
                                stats=stats(), context=len(fitted.tokens))
            finish(reply.done_reason)
            self._chunk(h, final)
            self._end_stream(h)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise _ClientGone("streaming", sent) from exc

    def _frame(self, model: FakeModel, generate: bool, content: str, *, thinking: str = "",
               calls: list[dict[str, Any]] | None = None, done: bool = False,
               done_reason: str = "stop", stats: dict[str, Any] | None = None,
               context: int | None = None) -> dict[str, Any]:
        obj: dict[str, Any] = {"model": model.name, "created_at": _now()}
        if generate:
            obj["response"] = content
            if thinking:
                obj["thinking"] = thinking
        else:
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if thinking:
                message["thinking"] = thinking
            if calls:
                message["tool_calls"] = calls
            obj["message"] = message
        obj["done"] = done
        if done:
            obj["done_reason"] = done_reason
            if generate and context is not None:
                obj["context"] = list(range(1, context + 1))
            obj.update(stats or {})
        return obj

    def _start_stream(self, h: _Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/x-ndjson")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Date", h.date_time_string())
        h.end_headers()

    def _chunk(self, h: _Handler, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode() + b"\n"
        h.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        h.wfile.flush()

    def _end_stream(self, h: _Handler) -> None:
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()

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

    # --- embeddings -------------------------------------------------------------------------

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
