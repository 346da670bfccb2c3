"""The TUI against what a real Ollama does on a laptop (issue 12), through the fake server that
reproduces it (tests/fake_ollama.py; its rules cite ollama/ollama's source): thinking models,
the silent wait before the first token, the preload, Esc in every phase.

The app runs over the real core (sessions in SQLite, the engine, llama-index's Ollama client
over real HTTP); only the embedding model is the fast HashEmbedder.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.widgets import OptionList

from assistant.context import AppContext
from tests.fake_ollama import FakeOllamaServer, FakeTiming, chat_turn
from tests.fakes import HashEmbedder
from tests.tui.conftest import BrainTestApp
from tests.tui.helpers import answer_finished, ask, wait_until
from tui.backend import CoreBackend
from tui.widgets.message import AnswerMessage

SIZE = (140, 40)
REASONING = "The user wants to set work aside; source [2] is about branches. MARKER-7f3"
ANSWER = "Stash it with `git stash` [1]."


def make(core: tuple[AppContext, CoreBackend]) -> BrainTestApp:
    ctx, backend = core
    # No idle extraction: its requests would interleave with the ones the tests look at.
    return BrainTestApp(ctx, backend, ollama_poll_seconds=0.2, memory_poll_seconds=0.5,
                        watch=False, extract_idle_seconds=0)


def _answer(app: BrainTestApp) -> AnswerMessage:
    return app.query(AnswerMessage).last()


def _status(answer: AnswerMessage) -> str:
    return str(answer.query_one(".answer-status").render())


def _turn_requests(fake: FakeOllamaServer) -> list[dict[str, Any]]:
    return [b for b in fake.chat_requests if chat_turn(b)]


def _unload(fake: FakeOllamaServer, model: str) -> None:
    """`ollama stop MODEL`: an empty request with keep_alive 0 (server/routes.go)."""
    httpx.post(f"{fake.url}/api/chat", json={"model": model, "messages": [], "keep_alive": 0},
               timeout=5, trust_env=False).raise_for_status()


async def _started(pilot: Any, fake: FakeOllamaServer) -> None:
    """The app is up and its preload of the default model is over."""
    await wait_until(pilot, lambda: pilot.app.chat_screen.status.preloaded == "qwen3:4b",
                     timeout=30, what="the preload")


# --- thinking --------------------------------------------------------------------------------

async def test_reasoning_shows_collapsed_above_the_answer_and_goes_nowhere_else(
    core: tuple[AppContext, CoreBackend], fake_ollama: FakeOllamaServer, tmp_path: Path,
) -> None:
    _ctx, backend = core
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "stash.md").write_text("# Stash\n\nSet work aside with git stash.\n")
    (notes / "branch.md").write_text("# Branches\n\nSet work aside on a branch: git switch -c.\n")
    backend.knowledge.add_folder(notes)
    backend.knowledge.sync(None, rebuild=False, progress=lambda _p: None)
    # qwen3:4b is thinking-capable: think=auto sends think:true, and Ollama streams the
    # reasoning in message.thinking (server/routes.go ChatHandler, model/parsers/qwen3.go).
    fake_ollama.script_chat(ANSWER, thinking=REASONING, chunk_delay=0.02, match=chat_turn)
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        await _started(pilot, fake_ollama)
        await ask(pilot, "How do I set work aside?")
        await wait_until(pilot, lambda: answer_finished(app), timeout=30, what="the answer")
        answer = _answer(app)
        block = answer.thinking
        assert block is not None and block.collapsed  # collapsed by default
        assert block.title.startswith("thought for ") and block.title.endswith(" s")
        assert "MARKER-7f3" in block.text
        assert answer.text == ANSWER  # the answer's text: copied, cited, stored
        assert "MARKER" not in answer.body.source
        # Never cited: [2] in the reasoning does not mark source 2; the answer's [1] does.
        assert [s.number for s in answer.sources if s.cited] == [1]
        assert len(answer.sources) >= 2
        # The block sits above the answer.
        assert list(answer.children).index(block) < list(answer.children).index(answer.body)

        # Expandable: `t` (or Enter) on the answer, a click or Enter on its title.
        answer.focus()
        await pilot.press("t")
        await wait_until(pilot, lambda: not block.collapsed, what="expanded by t")
        await pilot.press("enter")
        await wait_until(pilot, lambda: block.collapsed, what="collapsed by Enter")
        await pilot.click(block.query_one("CollapsibleTitle"))
        await wait_until(pilot, lambda: not block.collapsed, what="expanded by a click")
        text = str(block.query_one(".thinking-text").render())
        assert "MARKER-7f3" in text

        # Never stored as the answer, nor exported, nor sent back to the model.
        session_id = app.chat_screen.chat.session_id
        assert session_id
        turns = backend.sessions.turns(session_id)
        assert [t.answer for t in turns] == [ANSWER]
        exported = backend.sessions.export_markdown(session_id,
                                                    _ctx.paths.data_dir / "export.md")
        assert "MARKER" not in exported.read_text(encoding="utf-8")
        await ask(pilot, "And then?")
        await wait_until(pilot, lambda: len(app.query(AnswerMessage)) == 2
                         and _answer(app).finished, timeout=30, what="the second answer")
        sent = _turn_requests(fake_ollama)[-1]["messages"]
        # The history carries the answer (its citation numbers dropped: they change per turn).
        assert {"role": "assistant", "content": "Stash it with `git stash`."} in sent
        assert not any("MARKER" in str(m.get("content")) for m in sent)


async def test_untagged_reasoning_ended_by_think_is_moved_out_of_the_answer(
    ollama_home: Path, fake_ollama: FakeOllamaServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = ollama_home
    # A model whose template says thinking can be switched off, asked with think:false, that
    # reasons anyway: untagged reasoning, `</think>`, then the answer, all in content
    # (ollama/ollama#12736). The app shows it as the answer until `</think>` arrives.
    fake_ollama.add_model("qwen3:8b", reasoning="hybrid")
    config = home / "config" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8")
                      + 'model = "qwen3:8b"\nthink = "off"\n', encoding="utf-8")
    ctx2 = AppContext.load(str(home))
    ctx2._embedder = HashEmbedder()
    backend = CoreBackend(ctx2)
    fake_ollama.script_chat(["Hmm, MARKER ", "stash ", "probably.", "</think>", "\n\n",
                             "Stash ", "it."], thinking="", chunk_delay=0.15, match=chat_turn)
    # Every replacement is recorded from the start: a spy set once the answer is on screen
    # could miss a `</think>` that a busy machine delivered before it.
    replaced: list[tuple[str, str]] = []
    shown = AnswerMessage.replace

    async def spy(self: AnswerMessage, text: str, thinking: str = "") -> None:
        replaced.append((text, thinking))
        await shown(self, text, thinking)

    monkeypatch.setattr(AnswerMessage, "replace", spy)
    app = make((ctx2, backend))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.chat_screen.status.preloaded == "qwen3:8b",
                             timeout=30, what="the preload")
            await ask(pilot, "How do I stash?")
            answer = _answer(app)
            await wait_until(pilot, lambda: answer.finished, timeout=30, what="the answer")
            assert answer.text == "Stash it."
            # What was shown as the answer until `</think>` moved to the reasoning.
            assert replaced == [("", "Hmm, MARKER stash probably.")]
            assert "MARKER" not in answer.body.source
            block = answer.thinking
            assert block is not None and block.collapsed and "MARKER" in block.text
            assert block.title.startswith("thought for ")
            turns = backend.sessions.turns(app.chat_screen.chat.session_id or "")
            assert [t.answer for t in turns] == ["Stash it."]
    finally:
        backend.close()


async def test_what_looked_like_reasoning_but_was_the_answer_is_shown_as_the_answer(
    ollama_home: Path, fake_ollama: FakeOllamaServer,
) -> None:
    # think off on the thinking-only qwen3:4b: its reply is read as reasoning until `</think>`
    # (ollama/ollama#12736). A reply that never sends one was the answer after all.
    config = ollama_home / "config" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + 'think = "off"\n', encoding="utf-8")
    ctx = AppContext.load(str(ollama_home))
    ctx._embedder = HashEmbedder()
    backend = CoreBackend(ctx)
    fake_ollama.script_chat(["Just ", "the ", "answer."], thinking="", chunk_delay=0.1,
                            match=chat_turn)
    app = make((ctx, backend))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await _started(pilot, fake_ollama)
            await ask(pilot, "Short please.")
            answer = _answer(app)
            await wait_until(pilot, lambda: answer.finished, timeout=30, what="the answer")
            assert answer.text == "Just the answer." and answer.thinking is None
            turns = backend.sessions.turns(app.chat_screen.chat.session_id or "")
            assert [t.answer for t in turns] == ["Just the answer."]
    finally:
        backend.close()


# --- the silent wait -------------------------------------------------------------------------

async def test_the_silent_wait_says_what_ollama_is_doing(
    core: tuple[AppContext, CoreBackend], fake_ollama: FakeOllamaServer,
) -> None:
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        await _started(pilot, fake_ollama)
        # Ollama sends nothing before the first token (server/routes.go streamResponse writes
        # the headers with the first chunk): the reading of the prompt is silent. It lasts
        # until the test has seen the wait described: a reading of a fixed length (it was 52 s
        # at 8 tokens/s, which setting a faster timing later did not shorten) left the answer
        # a few seconds of its 60 to arrive, and under load it missed them.
        read = threading.Event()
        fake_ollama.script_chat(hold=read, match=chat_turn)
        await ask(pilot, "What is in my notes about backups and restores?")
        answer = _answer(app)
        bar = app.chat_screen.status_bar
        await wait_until(pilot, lambda: "prompt tokens…" in _status(answer), timeout=30,
                         what="the prompt reading in the answer's placeholder")
        status = _status(answer)
        assert status.startswith("reading ") and "Esc stops" in status
        await wait_until(pilot, lambda: "prompt tokens…" in bar.model_activity,
                         what="the same in the status line")
        seen = {_status(answer)}
        def counting() -> bool:
            seen.add(_status(answer))
            return len(seen) >= 2

        await wait_until(pilot, counting,
                         timeout=20, what="the seconds counting")
        read.set()
        await wait_until(pilot, lambda: answer.finished, timeout=60, what="the answer")
        assert bar.model_activity == ""
        # The model loaded once, at the preload: the turn paid no load and no reload.
        assert [load.reason for load in fake_ollama.loads] == ["cold"]


async def test_esc_during_a_silent_load_aborts_it(
    core: tuple[AppContext, CoreBackend], fake_ollama: FakeOllamaServer,
) -> None:
    _ctx, backend = core
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        await _started(pilot, fake_ollama)
        _unload(fake_ollama, "qwen3:4b")  # e.g. keep_alive ran out while the user was away
        fake_ollama.timing = FakeTiming(load_seconds=60)
        await ask(pilot, "Are you there?")
        answer = _answer(app)
        await wait_until(pilot, lambda: _status(answer).startswith("loading qwen3:4b… "),
                         timeout=30, what="the load in the answer's placeholder")
        assert "loading qwen3:4b… " in app.chat_screen.status_bar.model_activity
        assert fake_ollama.loading() == {"qwen3:4b"}
        await pilot.press("escape")
        await wait_until(pilot, lambda: answer.finished, timeout=10, what="the stop")
        assert "interrupted" in _status(answer)
        # Ollama aborts a load whose client left (server/sched.go: WaitUntilRunning(req.ctx)).
        await wait_until(pilot, lambda: any(d.phase == "loading"
                                            for d in fake_ollama.disconnects),
                         what="the fake to see the client leave during the load")
        await wait_until(pilot, lambda: bool(fake_ollama.loads) and fake_ollama.loads[-1].aborted,
                         what="the load aborted")
        assert not fake_ollama.loading()
        [turn] = backend.sessions.turns(app.chat_screen.chat.session_id or "")
        assert turn.question == "Are you there?" and turn.answer == ""
        assert "interrupted" in turn.status
        assert app.chat_screen.chat.generating is None  # free for the next question


async def test_esc_while_the_model_thinks_stops_it_and_keeps_no_reasoning(
    core: tuple[AppContext, CoreBackend], fake_ollama: FakeOllamaServer,
) -> None:
    _ctx, backend = core
    long_reasoning = " ".join(f"thought{i}" for i in range(400))
    fake_ollama.script_chat(ANSWER, thinking=long_reasoning, chunk_delay=0.03, match=chat_turn)
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        await _started(pilot, fake_ollama)
        await ask(pilot, "Think hard.")
        answer = _answer(app)
        await wait_until(pilot, lambda: answer.thinking is not None
                         and "thought5 " in answer.thinking.text, timeout=30,
                         what="the reasoning to stream")
        block = answer.thinking
        assert block is not None and block.thinking and block.title.startswith("thinking… (")
        await pilot.press("escape")
        await wait_until(pilot, lambda: answer.finished, timeout=10, what="the stop")
        assert block.title.startswith("thinking stopped after ")
        await wait_until(pilot, lambda: any(d.phase == "streaming"
                                            for d in fake_ollama.disconnects),
                         what="the stream closed")
        gone = next(d for d in fake_ollama.disconnects if d.phase == "streaming")
        assert gone.chunk < 400  # Ollama stopped long before the reasoning's end
        [turn] = backend.sessions.turns(app.chat_screen.chat.session_id or "")
        assert turn.answer == "" and "interrupted" in turn.status


# --- preload ---------------------------------------------------------------------------------

async def test_the_model_is_preloaded_at_start_and_on_a_model_change(
    core: tuple[AppContext, CoreBackend], fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.add_model("llama3.2:3b", capabilities=("completion", "tools"), reasoning="none",
                          context_length=131072)
    fake_ollama.timing = FakeTiming(load_seconds=6)  # long enough to be shown and typed over
    app = make(core)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.chat_screen.status_bar
        await wait_until(pilot, lambda: bar.model_activity.startswith("loading qwen3:4b… "),
                         timeout=30, what="the preload in the status line")
        # The UI never waits for it: typing works while Ollama loads.
        chat_input = app.chat_screen.chat_input
        chat_input.focus()
        await pilot.press("h", "i")
        assert chat_input.text == "hi" and app.chat_screen.status.preloaded is None
        chat_input.clear()
        await _started(pilot, fake_ollama)
        assert bar.model_activity == ""
        # An empty chat request (server/routes.go ChatHandler: no messages = load the model)
        # with the turns' num_ctx and keep_alive; the UI answered meanwhile (it is a worker).
        preload = fake_ollama.chat_requests[0]
        assert preload["messages"] == [] and preload["model"] == "qwen3:4b"
        num_ctx = preload["options"]["num_ctx"]
        assert num_ctx == 8192 and preload["keep_alive"] == "10m"  # the config's defaults
        assert fake_ollama.loaded() == {"qwen3:4b": num_ctx}

        fake_ollama.timing = FakeTiming()
        await ask(pilot, "hello")
        await wait_until(pilot, lambda: answer_finished(app), timeout=30, what="the answer")
        assert _turn_requests(fake_ollama)[-1]["options"]["num_ctx"] == num_ctx
        assert [load.reason for load in fake_ollama.loads] == ["cold"]  # no load, no reload

        # F4: another model is loaded at once, with the same num_ctx.
        await pilot.press("f4")
        await wait_until(pilot, lambda: app.screen.query(OptionList)
                         and app.screen.query_one(OptionList).option_count >= 2,
                         what="the model list")
        options = app.screen.query_one(OptionList)
        options.highlighted = options.get_option_index("llama3.2:3b")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.chat_screen.status.preloaded == "llama3.2:3b",
                         timeout=30, what="the new model preloaded")
        new = [b for b in fake_ollama.chat_requests if b["model"] == "llama3.2:3b"]
        assert new[0]["messages"] == [] and new[0]["options"]["num_ctx"] == num_ctx
        assert fake_ollama.loaded()["llama3.2:3b"] == num_ctx
