"""Run `brain` commands in forked children, SIGKILLed at an exact point of their own work.

A worker process imports the CLI and the heavy libraries once, then forks one child per job
(a fresh `brain` run costs about a second; a fork a few milliseconds). A job is one JSON line
on the worker's stdin: `{"argv": [...], "out": FILE, "kill_at": N | null, "count": FILE | null}`.
The child counts every Python function call in `assistant/` and `indexing/` (on every thread)
and SIGKILLs itself just before call number `kill_at`: a kill point between any two steps of
the program, with no hook in the product. With `count`, the child writes the number of calls
of its whole run and the call number at which each of `MARKS` was first entered, so the test
can draw kill points from the part of the run that matters (after the removal's intent).
The worker answers each job with `{"code": exit status, "killed": bool}`.

Calls are counted with a trace function (`sys.settrace`), which Python calls once per new
frame, not for every C call and return as a profile function is; a job that neither kills
nor counts runs untraced, at full speed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

MARKS = ("recorded", "finish_removal", "erase_traces", "clear", "sync_folders", "repair",
         "begin_import", "begin_run", "embed_documents", "upsert_vectors", "clear_index",
         "upsert", "_commit", "reconcile", "_refresh_snapshot")

WORKER = r"""
import json, os, signal, sys, threading

root, marks = sys.argv[1], tuple(sys.argv[2].split(","))
prefixes = (os.path.join(root, "assistant") + os.sep, os.path.join(root, "indexing") + os.sep)

from assistant.cli import main as cli
import assistant.erasure.actions, assistant.memory.store, assistant.sessions.store
import indexing.knowledge, indexing.vectors, indexing.sync
import chromadb

def child(job):
    out = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the jobs' pipe is the worker's alone
    state = {"n": 0, "first": {}}
    kill_at = job.get("kill_at")
    lock = threading.Lock()

    def trace(frame, event, arg):
        # Called for event "call" only (a new frame); None: no line tracing inside it.
        if not frame.f_code.co_filename.startswith(prefixes):
            return None
        with lock:
            state["n"] += 1
            n = state["n"]
            name = frame.f_code.co_name
            if name in marks and name not in state["first"]:
                state["first"][name] = n
        if kill_at is not None and n >= kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return None

    traced = kill_at is not None or bool(job.get("count"))
    if traced:
        threading.settrace(trace)
        sys.settrace(trace)
    code = 1
    try:
        code = cli.main(job["argv"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.settrace(None)
        threading.settrace(None)
        if job.get("count"):
            with open(job["count"], "w") as f:
                json.dump({"calls": state["n"], "first": state["first"]}, f)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code or 0)

for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(job)
    _, status = os.waitpid(pid, 0)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    print(json.dumps({"code": code, "killed": killed}), flush=True)
"""


@dataclass(frozen=True)
class Outcome:
    code: int
    killed: bool
    output: str
    calls: int = 0
    first: dict[str, int] | None = None


class KillWorker:
    def __init__(self, env: dict[str, str], scratch: Path) -> None:
        self.scratch = scratch
        self.jobs = 0
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(ROOT), ",".join(MARKS)], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=scratch)

    def run(self, home: Path, *args: str, kill_at: int | None = None,
            count: bool = False) -> Outcome:
        self.jobs += 1
        out = self.scratch / f"job{self.jobs}.out"
        counted = self.scratch / f"job{self.jobs}.count" if count else None
        job: dict[str, Any] = {"argv": ["--home", str(home), *args], "out": str(out),
                               "kill_at": kill_at, "count": str(counted) if counted else None}
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        text = out.read_text(encoding="utf-8", errors="replace")
        out.unlink()
        if counted is not None and counted.exists():
            info = json.loads(counted.read_text())
            counted.unlink()
            return Outcome(answer["code"], answer["killed"], text, info["calls"], info["first"])
        return Outcome(answer["code"], answer["killed"], text)

    @classmethod
    @contextmanager
    def started(cls, env: dict[str, str], scratch: Path) -> Iterator[KillWorker]:
        """One worker for a whole test module: the CLI and Chroma are imported once."""
        worker = cls(env, scratch)
        try:
            yield worker
        finally:
            worker.close()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        if self.proc.stdout:
            self.proc.stdout.close()
