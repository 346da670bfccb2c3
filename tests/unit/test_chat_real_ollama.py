"""The chat engine against what a real Ollama does on a laptop (issue 12), through the fake that
reproduces it (tests/unit/test_fake_ollama_fidelity.py shows the fake's behaviours against
ollama/ollama's source): thinking models, the silent first-token wait, one num_ctx per session,
the prompt cache, background jobs that yield, the preload, "remember that …"."""

from __future__ import annotations

import asyncio
import time

import pytest

from assistant.chat.events import (
    AnswerReplaced,
    Done,
    Failed,
    Retrieved,
    Thinking,
    Token,
    Waiting,
)
from tests.fake_ollama import FakeTiming
from tests.fake_ollama_runtime import count_tokens
from tests.fixtures.chat import ChatRig, knowledge_item, memory_item
from tests.waiting import wait_until_async


async def collect(stream):
    return [event async for event in stream]


def answer_text(events: list[object]) -> str:
    """What a UI shows as the answer, applying AnswerReplaced."""
    text = ""
    for event in events:
        if isinstance(event, Token):
            text += event.text
        elif isinstance(event, AnswerReplaced):
            text = event.answer
    return text


def _is_background(body: dict) -> bool:
    return bool(body.get("format"))


# --- thinking --------------------------------------------------------------------------------

async def test_a_thinking_model_reasons_apart_and_nothing_of_it_is_stored(
    chat_rig: ChatRig,
) -> None:
    chat_rig.fake.script_chat("Stash it.", thinking="The user wants to set work aside.")
    engine = chat_rig.make()
    events = await collect(engine.send("How do I set work aside?"))
    assert chat_rig.fake.last_chat()["think"] is True  # think = auto
    thoughts = [e for e in events if isinstance(e, Thinking)]
    assert "".join(t.text for t in thoughts) == "The user wants to set work aside."
    assert all(t.seconds >= 0 for t in thoughts)
    assert answer_text(events) == "Stash it."
    done = events[-1]
    assert isinstance(done, Done) and done.turn.answer == "Stash it."
    assert done.turn.timings["thinking_ms"] >= 0
    assert "set work aside" not in chat_rig.store.turn(done.turn.id).answer
    # Never sent back to the model: the next request's history holds the answer only.
    await engine.ask("and then?")
    history = chat_rig.fake.last_chat()["messages"]
    assert history[2] == {"role": "assistant", "content": "Stash it."}


async def test_think_off_on_a_thinking_only_model_still_keeps_reasoning_out(
    chat_rig: ChatRig,
) -> None:
    # qwen3:4b (Thinking-2507) with think:false: untagged reasoning, </think>, the answer —
    # all in `content` (ollama/ollama#12736).
    chat_rig.fake.script_chat("Use git stash.", thinking="Okay so the user asks about stash.")
    events = await collect(chat_rig.make(think="off").send("How do I stash?"))
    assert chat_rig.fake.last_chat()["think"] is False
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert "".join(tokens) == "Use git stash."
    assert not any("think>" in t or "Okay" in t for t in tokens)  # never shown, not even once
    assert not any(isinstance(e, AnswerReplaced) for e in events)
    assert "".join(e.text for e in events if isinstance(e, Thinking)).startswith("Okay so")
    done = events[-1]
    assert isinstance(done, Done) and done.turn.answer == "Use git stash."


async def test_unexpected_untagged_reasoning_is_taken_back_and_learned(
    chat_rig: ChatRig,
) -> None:
    # A model whose template says thinking can be switched off, but that reasons anyway.
    chat_rig.fake.add_model("qwen3:8b", reasoning="hybrid")
    engine = chat_rig.make(think="off", model="qwen3:8b")
    chat_rig.fake.script_chat(["Hmm, stash ", "probably.", "</think>", "\n\nStash it."],
                              thinking="")
    events = await collect(engine.send("q1"))
    [replaced] = [e for e in events if isinstance(e, AnswerReplaced)]
    assert replaced.thinking == "Hmm, stash probably." and replaced.answer == ""
    assert answer_text(events) == "Stash it."
    done = events[-1]
    assert isinstance(done, Done) and done.turn.answer == "Stash it."
    # Learned: the next reply from this model is read as reasoning until </think>.
    chat_rig.fake.script_chat(["More ", "musing.", "</think>", "Pop it."], thinking="")
    events = await collect(engine.send("q2"))
    assert not any(isinstance(e, AnswerReplaced) for e in events)
    assert [e.text for e in events if isinstance(e, Token)] == ["Pop it."]


async def test_inline_think_tags_from_a_model_without_the_capability(chat_rig: ChatRig) -> None:
    chat_rig.fake.add_model("deepseek-r1:1.5b", capabilities=("completion",), reasoning="inline")
    events = await collect(chat_rig.make(model="deepseek-r1:1.5b").send("hi"))
    assert "think" not in chat_rig.fake.last_chat()  # Ollama refuses think: true here
    assert answer_text(events).startswith("echo: hi")
    assert "".join(e.text for e in events if isinstance(e, Thinking)).startswith("Okay")


# --- the silent wait -------------------------------------------------------------------------

async def test_waiting_reports_the_load_then_the_prompt_reading(chat_rig: ChatRig) -> None:
    chat_rig.fake.timing = FakeTiming(load_seconds=1.6)
    engine = chat_rig.make()
    events = await collect(engine.send("first"))
    waiting = [e for e in events if isinstance(e, Waiting)]
    assert waiting and waiting[0].phase == "loading" and waiting[0].model == "qwen3:4b"
    assert waiting[-1].seconds >= 1.0 and waiting[0].limit == engine.settings.first_token_timeout
    assert isinstance(events[-1], Done)
    # Loaded now: a slow prompt read is reported as reading, with the tokens to read.
    chat_rig.fake.timing = FakeTiming(prompt_tokens_per_second=25)
    events = await collect(engine.send("second " + "word " * 20))
    waiting = [e for e in events if isinstance(e, Waiting)]
    assert waiting and waiting[-1].phase == "reading"
    assert 0 < waiting[-1].prompt_tokens < events[-1].turn.timings["prompt_tokens"]


async def test_cancel_during_the_silent_wait_aborts_the_load(chat_rig: ChatRig) -> None:
    chat_rig.fake.timing = FakeTiming(load_seconds=5.0)
    engine = chat_rig.make()
    stream = engine.send("are you there?")
    cancelled_at = 0.0
    async for event in stream:
        if isinstance(event, Waiting) and not cancelled_at:
            cancelled_at = time.monotonic()
            stream.cancel()
    done = await stream.result()
    assert isinstance(done, Done) and done.interrupted and done.turn.answer == ""
    assert time.monotonic() - cancelled_at < 2.0  # the load had 4 s to go
    await wait_until_async(lambda: bool(chat_rig.fake.loads))
    assert chat_rig.fake.loads[-1].aborted  # Ollama dropped the load
    assert chat_rig.fake.disconnects[-1].phase == "loading"


# --- one model, one num_ctx ------------------------------------------------------------------

async def test_preload_loads_with_the_turns_num_ctx_and_keep_alive(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(keep_alive="30m")
    seconds = await engine.preload()
    assert seconds >= 0
    [request] = chat_rig.fake.chat_requests
    assert request["messages"] == [] and request["keep_alive"] == "30m"
    assert chat_rig.fake.loaded() == {"qwen3:4b": 8192}
    await engine.ask("now the question")
    assert chat_rig.fake.last_chat()["options"]["num_ctx"] == 8192
    assert [load.reason for load in chat_rig.fake.loads] == ["cold"]  # the turn loaded nothing


async def test_preload_with_a_missing_model_says_what_to_pull(chat_rig: ChatRig) -> None:
    from assistant.llm.errors import ChatError

    with pytest.raises(ChatError, match="ollama pull gone:1b"):
        await chat_rig.make(model="gone:1b").preload()


async def test_every_request_of_a_session_carries_the_same_num_ctx(chat_rig: ChatRig) -> None:
    chat_rig.memory.ask_model = True  # extraction goes to the (fake) model through the engine
    engine = chat_rig.make(extract_every_turns=2, history_turns=1, fold_batch=1)
    await engine.preload()
    for i in range(5):
        assert isinstance(await engine.ask(f"question {i}"), Done)
        await engine.drain(timeout=10)
    await engine.finish(timeout=10)
    background = [b for b in chat_rig.fake.chat_requests if _is_background(b)]
    assert len(background) >= 3  # extraction and summaries happened
    assert {o.get("num_ctx") for o in chat_rig.fake.chat_options()} == {8192}
    assert chat_rig.fake.reloads == 0 and len(chat_rig.fake.loads) == 1
    assert all(b["think"] is False and b["options"].get("num_predict") for b in background)


async def test_num_ctx_is_capped_at_the_models_own_context(chat_rig: ChatRig) -> None:
    chat_rig.fake.add_model("tiny:1b", context_length=2048, capabilities=("completion",))
    await chat_rig.make(model="tiny:1b", num_ctx=8192).ask("hi")
    assert chat_rig.fake.last_chat()["options"]["num_ctx"] == 2048


async def test_background_jobs_use_the_sessions_model(chat_rig: ChatRig) -> None:
    chat_rig.memory.ask_model = True
    chat_rig.fake.add_model("qwen3:8b", reasoning="hybrid")
    engine = chat_rig.make(extract_every_turns=1)
    await engine.ask("first, on the default model")
    await engine.drain(timeout=10)
    await asyncio.to_thread(engine.set_model, "qwen3:8b")
    await engine.ask("I moved to Lisbon.")
    await engine.drain(timeout=10)
    extraction = [b for b in chat_rig.fake.chat_requests if _is_background(b)][-1]
    assert extraction["model"] == "qwen3:8b"


# --- background jobs yield -------------------------------------------------------------------

async def test_background_extraction_yields_at_once_to_a_question(chat_rig: ChatRig) -> None:
    chat_rig.memory.ask_model = True
    engine = chat_rig.make(extract_every_turns=0)
    await engine.ask("I live in Lisbon.")
    # A slow extraction (Ollama answers one request at a time: it would hold the question).
    chat_rig.fake.script_chat([f"w{i} " for i in range(200)], chunk_delay=0.05,
                              match=_is_background)
    extraction = asyncio.create_task(engine.extract_pending(timeout=20))
    await wait_until_async(lambda: any(_is_background(b) for b in chat_rig.fake.chat_requests))
    started = time.monotonic()
    chat_rig.fake.script_chat("Lisbon is lovely.", match=lambda b: not _is_background(b))
    done = await engine.ask("What is Lisbon like?")
    assert isinstance(done, Done) and done.turn.answer == "Lisbon is lovely."
    assert time.monotonic() - started < 3.0  # not behind 200 chunks (10 s)
    assert await extraction == 0  # yielded: nothing extracted yet, nothing lost
    assert engine.jobs.yielded == 1
    await wait_until_async(lambda: any(d.phase in ("prompt", "streaming", "queued")
                                 for d in chat_rig.fake.disconnects))
    assert engine.session is not None and engine.session.extracted_through == 0
    # Retried later, when the user is idle again.
    assert await engine.extract_pending(timeout=20) == 2
    assert [q for q, _ in chat_rig.memory.extracted[-1]] == [
        "I live in Lisbon.", "What is Lisbon like?"]


# --- a cacheable prompt ----------------------------------------------------------------------

async def test_a_turn_re_reads_only_the_last_answer_and_the_new_material(
    chat_rig: ChatRig,
) -> None:
    chat_rig.knowledge.items = [knowledge_item(1, "git stash saves work. " * 30),
                                knowledge_item(2, "git worktree adds a checkout. " * 30)]
    chat_rig.memory.items = [memory_item(1, "Prefers short answers.")]
    engine = chat_rig.make()
    for i in range(4):
        chat_rig.fake.script_chat(f"Answer number {i} [1].", thinking="")
        assert isinstance(await engine.ask(f"question {i} about git"), Done)
    systems = {b["messages"][0]["content"] for b in chat_rig.fake.chat_requests}
    assert len(systems) == 1  # byte-identical every turn
    last = chat_rig.fake.generations[-1]
    new_message = chat_rig.fake.last_chat()["messages"][-1]["content"]
    bound = count_tokens("Answer number 2 [1].") + count_tokens(new_message) + 24  # template
    assert last.evaluated_tokens <= bound
    done = await engine.ask("one more")
    assert isinstance(done, Done)
    timings = done.turn.timings
    # Ollama's count is the whole prompt (cache included); ours estimates the uncached part.
    assert timings["prompt_eval_count"] == chat_rig.fake.generations[-1].prompt_tokens
    assert 0 < timings["prompt_new_tokens"] < timings["prompt_tokens"]
    assert {"prompt_eval_ms", "eval_count", "load_ms"} <= set(timings)


async def test_after_the_reply_the_read_tokens_come_from_the_servers_count(
    chat_rig: ChatRig,
) -> None:
    """What the server read is its own count: the whole prompt's prompt_eval_count less its
    prompt_eval_cached_count (api.Metrics, sent once part of the prompt came from the cache) —
    exact on a first turn and after. The `ollama` client library dropped that field, and the
    status line showed a scaled estimate ("≈") until the chat spoke the wire itself (issue 24)."""
    from assistant.chat.events import read_note

    engine = chat_rig.make()
    chat_rig.fake.script_chat("First answer [1].", thinking="")
    first = (await engine.ask("how do I stash my changes in git?")).turn
    assert first is not None  # the answer finished, so its turn was stored
    real = chat_rig.fake.generations[-1]
    assert real.cached_tokens == 0
    assert first.timings["prompt_read_tokens"] == real.prompt_tokens
    assert read_note(first.timings) == f"read {real.prompt_tokens:,} new prompt tokens"
    chat_rig.fake.script_chat("Second answer [1].", thinking="")
    second = (await engine.ask("and how do I apply it again?")).turn
    assert second is not None
    real = chat_rig.fake.generations[-1]
    assert real.cached_tokens > 0
    assert second.timings["cached_tokens"] == real.cached_tokens
    assert second.timings["prompt_read_tokens"] == real.evaluated_tokens
    assert "prompt_read_approx" not in second.timings
    assert read_note(second.timings) == f"read {real.evaluated_tokens:,} new prompt tokens"


# --- small ones ------------------------------------------------------------------------------

async def test_remember_that_is_acknowledged_without_asking_the_model(chat_rig: ChatRig) -> None:
    events = await collect(chat_rig.make().send("remember that I use fish shell"))
    assert isinstance(events[0], Retrieved) and events[0].noted is not None
    assert answer_text(events) == "Remembered: I use fish shell"
    done = events[-1]
    assert isinstance(done, Done) and done.turn.status == "complete"
    assert chat_rig.fake.chat_requests == []  # not a question for the model


async def test_ollama_down_fails_before_searching_or_recalling(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1)]
    chat_rig.fake.stop()
    started = time.monotonic()
    failed = await chat_rig.make().ask("hello?")
    assert isinstance(failed, Failed) and failed.error.kind == "unavailable"
    assert time.monotonic() - started < 1.0
    assert chat_rig.knowledge.calls == [] and chat_rig.memory.recall_calls == []
    assert failed.turn is not None and failed.turn.question == "hello?"  # kept for retry


async def test_an_error_inside_the_stream_reads_like_one(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat("one two", error_after=1, error="model runner has unexpectedly "
                              "stopped", thinking="")
    failed = await chat_rig.make().ask("count")
    assert isinstance(failed, Failed)
    message = str(failed.error)
    assert "Ollama stopped with an error: model runner has unexpectedly stopped" in message
    assert "-1" not in message and "status code" not in message


async def test_the_preload_also_has_ollama_read_the_sessions_opening(chat_rig: ChatRig) -> None:
    engine = chat_rig.make()
    await engine.preload()
    await engine.drain(timeout=10)  # the warm-up is background work
    warm = chat_rig.fake.generations[-1]
    assert warm.output_tokens == 1 and chat_rig.fake.last_chat()["options"]["num_predict"] == 1
    chat_rig.fake.script_chat("An answer.", thinking="")
    await engine.ask("the first question")
    first = chat_rig.fake.generations[-1]
    # Only the question and its material were read: the system message was cached (and the
    # empty user message's header; not its end and the reply's header, where the question is).
    assert first.cached_tokens >= warm.prompt_tokens - 6
    system = chat_rig.fake.last_chat()["messages"][0]["content"]
    assert first.evaluated_tokens < first.prompt_tokens - count_tokens(system) + 8


async def test_quitting_does_not_wait_for_the_preloads_reading(chat_rig: ChatRig) -> None:
    # The opening takes a minute to read at 5 tokens/s: an exit right after the start must not
    # wait for it (the TUI preloads at start). Closing the request makes Ollama drop it.
    chat_rig.fake.timing = FakeTiming(prompt_tokens_per_second=5)
    engine = chat_rig.make()
    await engine.preload()
    # The warm-up (the opening, one token) holds Ollama's slot. Not just any busy slot: the
    # preload's empty request, which loads the model, comes first and holds it for a moment
    # (a wait for that one let the warm-up be cancelled before it was sent: no disconnect).
    await wait_until_async(lambda: any(b.get("messages") for b in chat_rig.fake.chat_requests)
                     and bool(chat_rig.fake.busy()))
    started = time.monotonic()
    assert await engine.finish(timeout=30)
    assert time.monotonic() - started < 5
    await wait_until_async(lambda: any(d.phase == "prompt" for d in chat_rig.fake.disconnects))


async def test_after_background_work_the_conversation_is_read_again_while_idle(
    chat_rig: ChatRig,
) -> None:
    # Ollama caches one prompt: extraction replaces the chat's. Re-reading the conversation
    # right after it (while the user reads) keeps the next question's wait short.
    chat_rig.memory.ask_model = True
    engine = chat_rig.make(extract_every_turns=2)
    for i in range(3):
        chat_rig.fake.script_chat(f"Answer {i}.", thinking="",
                                  match=lambda b: not _is_background(b) and b["messages"][-1]
                                  ["role"] == "user" and b["options"].get("num_predict") != 1)
        assert isinstance(await engine.ask(f"question {i}"), Done)
        await engine.drain(timeout=10)
    background = [b for b in chat_rig.fake.chat_requests if _is_background(b)]
    assert len(background) == 1  # extraction after the second turn
    last = chat_rig.fake.generations[-1]
    new_message = chat_rig.fake.last_chat()["messages"][-1]["content"]
    assert last.evaluated_tokens <= count_tokens("Answer 1.") + count_tokens(new_message) + 24
