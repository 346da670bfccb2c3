"""llama-cpp-python's OpenAI-compatible server for the real-model lane: started on a free
loopback port, stopped by its own process id, and read back from its log.

What the app cannot learn over the API — llama-cpp-python's server sends no usage in a
stream (abetlen/llama-cpp-python#1640) — the server prints per request on stderr (verbose):

    Llama.generate: 512 prefix-match hit, remaining 8 prompt tokens to eval
    llama_perf_context_print: prompt eval time =  210.11 ms /     8 tokens (…)
    llama_perf_context_print:        eval time =  380.94 ms /     7 runs   (…)

so each request's real prompt tokens (hit + remaining), cached tokens (hit), prompt reading
and generation times come from there (`requests_since(offset)`). The first request after
start prints no prefix line: nothing was cached.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PREFIX = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
EVAL = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs")
TOTAL = re.compile(r"total time =\s*([\d.]+) ms")


@dataclass(frozen=True, slots=True)
class ServedRequest:
    """One completion as the server's log tells it."""

    cached_tokens: int
    prompt_tokens: int  # the whole prompt, cached part included
    prompt_ms: float  # reading the uncached part
    generated_tokens: int
    generation_ms: float


def parse_log(text: str) -> list[ServedRequest]:
    out: list[ServedRequest] = []
    cached: int | None = None
    prompt: tuple[float, int] | None = None
    generated: tuple[float, int] = (0.0, 0)
    for line in text.splitlines():
        if (m := PREFIX.search(line)) is not None:
            cached = int(m.group(1))
        elif (m := PROMPT.search(line)) is not None:
            prompt = (float(m.group(1)), int(m.group(2)))
        elif "prompt eval" not in line and (m := EVAL.search(line)) is not None:
            generated = (float(m.group(1)), int(m.group(2)))
        elif TOTAL.search(line) is not None and prompt is not None:
            hit = cached or 0
            out.append(ServedRequest(hit, hit + prompt[1], prompt[0], generated[1],
                                     generated[0]))
            cached, prompt, generated = None, None, (0.0, 0)
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    def __init__(self, python: Path, gguf: Path, log: Path, *, alias: str = "smollm2",
                 n_ctx: int = 4096, threads: int = 2) -> None:
        self.python, self.gguf, self.log = python, gguf, log
        self.alias, self.n_ctx, self.threads = alias, n_ctx, threads
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 180.0) -> LlamaServer:
        self.port = free_port()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(
                [str(self.python), "-m", "llama_cpp.server", "--model", str(self.gguf),
                 "--model_alias", self.alias, "--host", "127.0.0.1", "--port", str(self.port),
                 "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
                 "--verbose", "True"],
                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2):
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout:g} s")

    def offset(self) -> int:
        return self.log.stat().st_size

    def requests_since(self, offset: int) -> list[ServedRequest]:
        with self.log.open("rb") as handle:
            handle.seek(offset)
            return parse_log(handle.read().decode("utf-8", "replace"))

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)  # its own session: the server and only it
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
