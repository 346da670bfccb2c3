"""llama_index is imported by one thread at a time (indexing/llama_import.py): a chat turn
building its first message while another thread loads the LlamaIndex embedding or parses tool
calls used to fail with "cannot import name 'ChatMessage' from partially initialized module"
(seen in the TUI under --stress). Run in fresh interpreters, where llama_index is not loaded
yet: importing these three ends of its import circle from three threads at once failed 6 times
in 6 without the shared lock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RACE = """
import threading
from assistant.chat.prompt import PromptMessage
from assistant.chat.reply import _tool_calls
from assistant.chat.turn_generate import _chat_message
from indexing.embedder import as_llama_embedding
from tests.fakes import HashEmbedder

class Last:
    message = None

gate = threading.Barrier(3)
failures = []

def run(job):
    gate.wait()
    try:
        job()
    except BaseException as exc:
        failures.append(repr(exc))

jobs = [lambda: _chat_message(PromptMessage(role="user", content="hi")),
        lambda: _tool_calls(Last()),
        lambda: as_llama_embedding(HashEmbedder())]
threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(failures)
"""


def test_three_threads_importing_llama_index_at_once_all_succeed() -> None:
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", RACE], cwd=ROOT, capture_output=True,
                              text=True, timeout=300, env={"PYTHONPATH": str(ROOT),
                                                           "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "[]", done.stdout


async def test_waiting_for_the_import_leaves_the_event_loop_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chat turn (on the TUI's loop) that needs llama_index while another thread imports it
    waits on a thread: the loop stood blocked for the whole import, ~10 s under --stress
    (the screen frozen, Esc unread). Here the import is held until the loop has run a step."""
    import importlib

    import indexing.llama_import as llama_import

    loop = asyncio.get_running_loop()
    importing = threading.Event()
    ticked = threading.Event()

    def held_import(name: str) -> None:
        importing.set()
        if not ticked.wait(10):  # set by the loop: only if it still runs
            raise AssertionError("the event loop was blocked by the import")

    monkeypatch.setattr(llama_import, "_loaded", False)
    monkeypatch.setattr(importlib, "import_module", held_import)
    loading = asyncio.ensure_future(llama_import.load_llama_index_async())
    assert await loop.run_in_executor(None, importing.wait, 10)
    ticked.set()  # the loop ran while the import was held
    await asyncio.wait_for(loading, 10)
    assert llama_import._loaded
