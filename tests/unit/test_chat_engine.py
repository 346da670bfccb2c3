"""The chat engine against the fake Ollama server: streaming, storage, errors, cancellation,
tools and the rolling summary."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from assistant.chat.events import Done, Failed, Retrieved, Thinking, Token, ToolCalled
from assistant.chat.extraction import MemoryExtraction
from assistant.sessions.turn import Turn
from tests.fixtures.chat import ChatRig, knowledge_item, memory_item
from tests.waiting import wait_until_async


async def collect(stream):
    return [event async for event in stream]


async def test_a_turn_streams_tokens_and_stores_citations(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1), knowledge_item(2)]
    chat_rig.memory.items = [memory_item(1)]
    chat_rig.fake.script_chat("Stash it [2].")
    engine = chat_rig.make()
    events = await collect(engine.send("How do I stash?"))

    assert isinstance(events[0], Retrieved)
    assert [s.n for s in events[0].sources] == [1, 2]
    assert [m.memory_id for m in events[0].memories] == ["mem-1"]
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert "".join(tokens) == "Stash it [2]." and len(tokens) > 1
    done = events[-1]
    assert isinstance(done, Done) and not done.interrupted
    turn = done.turn
    assert turn.answer == "Stash it [2]." and turn.status == "complete"
    assert [s.item.chunk_id for s in turn.citations] == ["chunk-2"]
    assert {"retrieval_ms", "recall_ms", "assembly_ms", "overhead_ms", "total_ms"} <= set(
        turn.timings
    )
    assert chat_rig.store.turns(turn.session_id) == [turn]

    request = chat_rig.fake.last_chat()
    assert request["options"]["num_ctx"] == 8192  # min(model's 262144, the 8192 cap)
    assert request["keep_alive"] == "10m"
    # think: auto → a thinking model is asked to think, its reasoning kept apart.
    assert request["think"] is True
    thoughts = "".join(e.text for e in events if isinstance(e, Thinking))
    assert thoughts.startswith("Okay, the user wrote") and thoughts not in turn.answer
    system = request["messages"][0]["content"]
    question = request["messages"][-1]
    assert question["role"] == "user" and question["content"].startswith("How do I stash?\n\n")
    # Per-turn material follows the question, memories before knowledge, never the system.
    material = question["content"]
    assert material.index("(fact) The user fact number 1.") < material.index(
        '<excerpt n="2" file="notes/doc2.md:20-25" heading="Section 2">')
    assert "notes/doc2.md" not in system and "fact number" not in system


async def test_retrieval_and_recall_run_concurrently(chat_rig: ChatRig) -> None:
    barrier = threading.Barrier(2, timeout=3)  # breaks unless both run at the same time
    chat_rig.knowledge.hook = barrier.wait

    def recall(query: str, k: int):
        barrier.wait()
        return []

    chat_rig.memory.recall = recall  # type: ignore[method-assign]
    done = await chat_rig.make().ask("how do I stash changes?")
    assert isinstance(done, Done)


async def test_follow_ups_continue_the_session_with_history(chat_rig: ChatRig) -> None:
    engine = chat_rig.make()
    chat_rig.fake.script_chat("Git stash saves work.")
    first = await engine.ask("What is git stash?")
    chat_rig.fake.script_chat("Use pop.")
    second = await engine.ask("and how do I get it back?")
    assert isinstance(first, Done) and isinstance(second, Done)
    assert first.turn.session_id == second.turn.session_id and second.turn.seq == 2
    messages = chat_rig.fake.last_chat()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "Git stash saves work."
    # The retriever gets the earlier user messages to build a follow-up query.
    assert chat_rig.knowledge.calls[-1][1] == ("What is git stash?",)


async def test_a_new_session_starts_empty_but_keeps_memory(chat_rig: ChatRig) -> None:
    chat_rig.memory.items = [memory_item(1, "Lives in Berlin.")]
    engine = chat_rig.make()
    first = await engine.ask("hi")
    engine.new_session()
    second = await engine.ask("hello again")
    assert isinstance(first, Done) and isinstance(second, Done)
    assert first.turn.session_id != second.turn.session_id
    messages = chat_rig.fake.last_chat()["messages"]
    assert len(messages) == 2 and "Lives in Berlin." in messages[-1]["content"]


async def test_knowledge_and_memory_can_be_turned_off(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1)]
    events = await collect(chat_rig.make().send("hi", use_knowledge=False, use_memory=False))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert not retrieved.knowledge_used and not retrieved.memory_used
    assert chat_rig.knowledge.calls == [] and chat_rig.memory.recall_calls == []
    assert "(knowledge search is off" in chat_rig.fake.last_chat()["messages"][-1]["content"]


async def test_low_confidence_reaches_the_prompt_and_the_turn(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1, score=0.05)]
    chat_rig.knowledge.low_confidence = True
    chat_rig.fake.script_chat("I did not find this in your files.")
    events = await collect(chat_rig.make().send("What is the airspeed of a swallow?"))
    assert isinstance(events[0], Retrieved) and events[0].low_confidence
    done = events[-1]
    assert isinstance(done, Done) and done.turn.low_confidence
    assert "Low confidence:" in chat_rig.fake.last_chat()["messages"][-1]["content"]


async def test_cancel_stops_generation_and_keeps_the_partial_answer(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat([f"word{i} " for i in range(200)], chunk_delay=0.05)
    engine = chat_rig.make()
    stream = engine.send("Write a long essay")
    tokens = []
    started = 0.0
    async for event in stream:
        if isinstance(event, Token):
            tokens.append(event.text)
            if len(tokens) == 3:
                started = time.monotonic()
                stream.cancel()
        last = event
    assert time.monotonic() - started < 1.0  # not waiting for the remaining 197 words
    assert isinstance(last, Done) and last.interrupted
    assert last.turn.answer.startswith("word0 word1 word2")
    assert last.turn.status == "interrupted"
    assert chat_rig.store.turns(last.turn.session_id)[0].status == "interrupted"

    # The interrupted answer is part of the next turn's history, marked as such.
    chat_rig.fake.script_chat("ok")
    await engine.ask("go on")
    assistant = chat_rig.fake.last_chat()["messages"][2]["content"]
    assert assistant.endswith("[answer interrupted by the user]")


async def test_cancel_before_the_answer_starts_still_records_the_message(
    chat_rig: ChatRig,
) -> None:
    chat_rig.fake.script_chat("late", delay=2)
    stream = chat_rig.make().send("are you there?")
    stream.cancel()
    done = await stream.result()
    assert isinstance(done, Done) and done.interrupted
    assert done.turn.question == "are you there?" and done.turn.answer == ""


# --- errors users hit -------------------------------------------------------------------------

async def test_ollama_not_running(chat_rig: ChatRig) -> None:
    engine = chat_rig.make()
    chat_rig.fake.stop()
    failed = await engine.ask("hello?")
    assert isinstance(failed, Failed)
    assert failed.error.kind == "unavailable" and failed.retryable
    assert "not running" in str(failed.error) and "ollama serve" in str(failed.error)
    assert failed.turn is not None and failed.turn.question == "hello?"
    assert chat_rig.store.turns(failed.turn.session_id)[0].status == "failed"

    chat_rig.fake.start()  # Ollama comes back: retry replaces the failed turn
    chat_rig.fake.script_chat("Hi!")
    retried = await (await engine.retry()).result()
    assert isinstance(retried, Done)
    turns = chat_rig.store.turns(retried.turn.session_id)
    assert [(t.question, t.status) for t in turns] == [("hello?", "complete")]


async def test_model_not_pulled(chat_rig: ChatRig) -> None:
    failed = await chat_rig.make(model="llama9:70b").ask("hello?")
    assert isinstance(failed, Failed)
    assert failed.error.kind == "model_not_found" and not failed.retryable
    assert "ollama pull llama9:70b" in str(failed.error)
    assert failed.turn is not None and failed.turn.question == "hello?"


async def test_model_removed_after_show_was_cached(chat_rig: ChatRig) -> None:
    engine = chat_rig.make()
    assert isinstance(await engine.ask("first"), Done)
    chat_rig.fake.remove_model("qwen3:4b")  # /api/chat now answers 404
    failed = await engine.ask("second")
    assert isinstance(failed, Failed) and failed.error.kind == "model_not_found"
    assert "ollama pull qwen3:4b" in str(failed.error)


async def test_first_token_timeout(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(timeout=0.3, first_token_timeout=1.2)
    await engine.ask("warm the model facts cache")
    chat_rig.fake.script_chat("too late", delay=3)
    failed = await engine.ask("slow?")
    assert isinstance(failed, Failed) and failed.error.kind == "timeout"
    assert "did not start answering within 1.2 s" in str(failed.error) and failed.retryable
    assert "first_token_timeout" in (failed.error.hint or "")


async def test_a_long_silent_wait_is_not_a_timeout(chat_rig: ChatRig) -> None:
    # ollama.timeout bounds the silence between chunks, not the load + prompt reading.
    engine = chat_rig.make(timeout=0.3)
    chat_rig.fake.script_chat("worth the wait", delay=1.0)
    done = await engine.ask("slow start?")
    assert isinstance(done, Done) and done.turn.answer == "worth the wait"


async def test_a_stall_mid_answer_fails_and_keeps_the_partial_answer(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(timeout=0.4)
    chat_rig.fake.script_chat(["one ", "two ", "three"], chunk_delay=2, thinking="")
    failed = await engine.ask("count")
    assert isinstance(failed, Failed) and failed.error.kind == "timeout"
    assert "nothing for 0.4 s" in str(failed.error)
    assert "partial answer is kept" in str(failed.error)
    assert failed.partial == "one " and failed.turn is not None
    assert failed.turn.answer == "one " and failed.turn.status == "failed"


async def test_connection_dropped_mid_stream_keeps_the_partial_answer(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat("one two three four five", disconnect_after=2)
    failed = await chat_rig.make().ask("count")
    assert isinstance(failed, Failed)
    assert failed.error.kind == "dropped" and failed.retryable
    assert failed.partial == "one two "
    assert failed.turn is not None and failed.turn.answer == "one two "
    assert "partial answer is kept" in str(failed.error)


async def test_error_reported_inside_the_stream(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat("one two three", error_after=1,
                              error="llama runner process has terminated")
    failed = await chat_rig.make().ask("count")
    assert isinstance(failed, Failed) and failed.error.kind == "server"
    assert "llama runner process has terminated" in str(failed.error)
    assert failed.partial == "one "


async def test_context_overflow_is_caught_before_sending(chat_rig: ChatRig) -> None:
    failed = await chat_rig.make(num_ctx=1024).ask("word " * 3000)
    assert isinstance(failed, Failed) and failed.error.kind == "context_overflow"
    assert "1024-token context window" in str(failed.error)
    assert "ollama.num_ctx" in str(failed.error)
    assert chat_rig.fake.chat_requests == []
    assert failed.turn is not None and failed.turn.question.startswith("word word")


async def test_context_overflow_reported_by_the_server(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat(fail=400, error="input length exceeds the context length")
    failed = await chat_rig.make().ask("hi")
    assert isinstance(failed, Failed) and failed.error.kind == "context_overflow"


async def test_malformed_server_reply(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat(raw_body=b"<html>proxy error</html>\n",
                              content_type="application/x-ndjson")
    failed = await chat_rig.make().ask("hi")
    assert isinstance(failed, Failed) and failed.error.kind == "protocol"
    assert "cannot read" in str(failed.error) or "malformed" in str(failed.error)
    assert failed.turn is not None and failed.turn.status == "failed"


async def test_knowledge_failure_is_reported_not_swallowed(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.fail = RuntimeError("index is locked")
    failed = await chat_rig.make().ask("how do I stash changes?")
    assert isinstance(failed, Failed) and failed.error.kind == "knowledge"
    assert "index is locked" in str(failed.error) and "--no-knowledge" in str(failed.error)


async def test_empty_message_is_refused(chat_rig: ChatRig) -> None:
    from assistant.llm.errors import ChatError

    with pytest.raises(ChatError, match="empty"):
        chat_rig.make().send("   ")


# --- models -----------------------------------------------------------------------------------

async def test_list_and_switch_models_keeps_the_session(chat_rig: ChatRig) -> None:
    chat_rig.fake.add_model("llama3.2:1b", context_length=2048, capabilities=("completion",))
    engine = chat_rig.make()
    first = await engine.ask("hi")
    assert isinstance(first, Done)
    # nomic-embed-text is installed too, but it cannot chat (capabilities: ["embedding"]).
    assert engine.available_models() == ["llama3.2:1b", "qwen3:4b"]
    engine.set_model("llama3.2:1b")
    second = await engine.ask("and now?")
    assert isinstance(second, Done)
    assert second.turn.session_id == first.turn.session_id
    assert second.turn.model == "llama3.2:1b"
    request = chat_rig.fake.last_chat()
    assert request["model"] == "llama3.2:1b"
    assert request["options"]["num_ctx"] == 2048  # the model's own, smaller window
    assert "think" not in request  # not a thinking model: no think flag sent
    assert chat_rig.store.get(first.turn.session_id).model == "llama3.2:1b"

    from assistant.llm.errors import ChatError

    with pytest.raises(ChatError, match="ollama pull nope"):
        engine.set_model("nope")
    with pytest.raises(ChatError, match="not a chat model"):
        engine.set_model("nomic-embed-text")


async def test_resuming_a_session_uses_its_model(chat_rig: ChatRig) -> None:
    chat_rig.fake.add_model("llama3.2:1b", capabilities=("completion",))
    engine = chat_rig.make()
    engine.set_model("llama3.2:1b")
    done = await engine.ask("hi")
    assert isinstance(done, Done)
    resumed = chat_rig.make(session_id=done.turn.session_id)
    assert resumed.model == "llama3.2:1b"


# --- tools ------------------------------------------------------------------------------------

async def test_tool_calls_round_trip(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1), knowledge_item(2), knowledge_item(3)]
    engine = chat_rig.make(tools=True)
    chat_rig.fake.script_chat(tool_calls=[
        {"name": "search_knowledge", "arguments": {"query": "docker volumes", "top_k": 3}},
        {"name": "remember", "arguments": {"text": "The user runs Fedora.", "type": "fact"}},
    ])
    chat_rig.fake.script_chat("Volumes persist data [3].")
    events = await collect(engine.send("How do docker volumes work? I'm on Fedora."))

    calls = [e for e in events if isinstance(e, ToolCalled)]
    assert [c.tool.name for c in calls] == ["search_knowledge", "remember"]
    assert calls[0].tool.arguments == {"query": "docker volumes", "top_k": 3}
    # Items already numbered in the prompt keep their number; only new ones are added.
    assert calls[0].sources == ()
    assert calls[1].tool.result == "Remembered (fact): The user runs Fedora."
    assert chat_rig.memory.remembered[0][:2] == ("The user runs Fedora.", "fact")
    done = events[-1]
    assert isinstance(done, Done)
    assert done.turn.answer == "Volumes persist data [3]."
    assert [t.name for t in done.turn.tools] == ["search_knowledge", "remember"]
    assert [s.n for s in done.turn.citations] == [3]

    first, second = chat_rig.fake.chat_requests
    assert [t["function"]["name"] for t in first["tools"]] == ["search_knowledge", "remember"]
    roles = [m["role"] for m in second["messages"]]
    assert roles[-3:] == ["assistant", "tool", "tool"]
    assert second["messages"][-3]["tool_calls"][0]["function"]["name"] == "search_knowledge"
    assert "[3] notes/doc3.md" in second["messages"][-2]["content"]


async def test_tool_search_adds_new_numbered_sources(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1)]
    engine = chat_rig.make(tools=True, top_k=1)
    chat_rig.knowledge.items = [knowledge_item(1), knowledge_item(7)]
    chat_rig.fake.script_chat(tool_calls=[
        {"name": "search_knowledge", "arguments": {"query": "more", "top_k": 2}},
    ])
    chat_rig.fake.script_chat("See [2].")
    events = await collect(engine.send("question"))
    [call] = [e for e in events if isinstance(e, ToolCalled)]
    assert [(s.n, s.item.chunk_id) for s in call.sources] == [(2, "chunk-7")]
    done = events[-1]
    assert isinstance(done, Done)
    assert [(s.n, s.item.chunk_id) for s in done.turn.citations] == [(2, "chunk-7")]


async def test_bad_tool_arguments_become_a_visible_result(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(tools=True)
    chat_rig.fake.script_chat(tool_calls=[{"name": "remember", "arguments": {"text": ""}},
                                          {"name": "rm_rf", "arguments": {}}])
    chat_rig.fake.script_chat("Sorry.")
    events = await collect(engine.send("hi"))
    results = [e.tool for e in events if isinstance(e, ToolCalled)]
    assert [r.ok for r in results] == [False, False]
    assert "non-empty" in results[0].result and "unknown tool" in results[1].result
    assert isinstance(events[-1], Done)


async def test_tools_are_not_offered_to_models_without_support(chat_rig: ChatRig) -> None:
    chat_rig.fake.add_model("tiny:1b", capabilities=("completion",))
    await chat_rig.make(tools=True, model="tiny:1b").ask("hi")
    assert not chat_rig.fake.last_chat().get("tools")


# --- rolling summary --------------------------------------------------------------------------

def _is_summary(body: dict) -> bool:
    return "running summary" in body["messages"][0]["content"]


async def test_old_turns_are_folded_into_a_summary_after_extraction(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(history_turns=2, fold_batch=1)
    for i in range(3):
        chat_rig.fake.script_chat(f"answer {i}", match=lambda b: not _is_summary(b))
        assert isinstance(await engine.ask(f"question {i}"), Done)
    chat_rig.fake.script_chat("The user asked question 0.", match=_is_summary)
    await engine.drain(timeout=5)
    session = engine.session
    assert session is not None
    assert session.summary == "The user asked question 0." and session.summary_through == 1
    assert chat_rig.memory.extracted == [[("question 0", "answer 0")]]
    summary_request = next(b for b in chat_rig.fake.chat_requests if _is_summary(b))
    assert "User: question 0" in summary_request["messages"][1]["content"]
    # A background request: the session's num_ctx, think off, a schema, a capped reply.
    assert summary_request["think"] is False and summary_request["format"]
    assert summary_request["options"]["num_ctx"] == 8192
    assert summary_request["options"]["num_predict"] > 0

    chat_rig.fake.script_chat("answer 3")
    await engine.ask("question 3")
    messages = chat_rig.fake.last_chat()["messages"]
    # The summary opens the conversation (not the system message, which stays as it was).
    assert messages[1] == {"role": "user",
                           "content": "## Conversation summary\nThe user asked question 0."}
    assert "Conversation summary" not in messages[0]["content"]
    assert messages[2] == {"role": "user", "content": "question 1"}


async def test_the_reply_never_waits_for_the_summary(chat_rig: ChatRig) -> None:
    # Ollama serves one request at a time: a slow summary would hold the question back, so
    # it yields (its request is closed) and is written again once the answer is done.
    engine = chat_rig.make(history_turns=0, fold_batch=1)
    chat_rig.fake.script_chat([f"slow{i} " for i in range(40)], chunk_delay=0.1,
                              match=_is_summary)
    chat_rig.fake.script_chat("first answer", match=lambda b: not _is_summary(b))
    await engine.ask("first")  # starts a fold in the background
    await wait_until_async(lambda: len(chat_rig.fake.requests_to("/api/chat")) == 2)
    chat_rig.fake.script_chat("second answer", match=lambda b: not _is_summary(b))
    chat_rig.fake.script_chat("The user said first and second.", match=_is_summary)
    started = time.monotonic()
    second = await engine.ask("second")
    assert isinstance(second, Done) and second.turn.answer == "second answer"
    assert time.monotonic() - started < 1.5
    assert engine.jobs.yielded == 1
    assert any(d.phase != "queued" for d in chat_rig.fake.disconnects)  # the summary's
    await engine.drain(timeout=5)
    assert engine.session is not None
    assert engine.session.summary == "The user said first and second."


async def test_a_failed_extraction_does_not_block_the_fold(chat_rig: ChatRig) -> None:
    chat_rig.memory.fail_extract = True
    engine = chat_rig.make(history_turns=0, fold_batch=1)
    chat_rig.fake.script_chat("The user was born in 1990.", match=_is_summary)
    await engine.ask("I was born in 1990.")
    await engine.drain(timeout=5)
    session = engine.session
    assert session is not None and session.summary_through == 1
    assert session.extracted_through == 0  # still pending: retried later and at exit


async def test_explicit_remember_is_stored_and_reported(chat_rig: ChatRig) -> None:
    events = await collect(chat_rig.make().send("remember that I use fish shell"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert retrieved.noted is not None and retrieved.noted.text == "I use fish shell"
    done = events[-1]
    assert isinstance(done, Done)
    assert chat_rig.memory.noted == [("I use fish shell", done.turn.session_id)]


async def test_the_retrieval_log_id_is_kept_with_the_turn(chat_rig: ChatRig) -> None:
    events = await collect(chat_rig.make().send("how do I stash changes?"))
    assert isinstance(events[0], Retrieved) and events[0].log_id == 1
    done = events[-1]
    assert isinstance(done, Done) and done.turn.log_id == 1
    assert chat_rig.store.turn(done.turn.id).log_id == 1


async def test_memory_extraction_every_n_turns_never_twice(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(extract_every_turns=2, history_turns=2, fold_batch=1)
    for i in range(4):
        chat_rig.fake.script_chat(f"answer {i}", match=lambda b: not _is_summary(b))
        await engine.ask(f"question {i}")
        await engine.drain(timeout=5)
    # Turns 1-2 after the second reply, 3-4 after the fourth; the fold of turns 1-2 (more than
    # history_turns=2 behind) found them already extracted.
    assert [[q for q, _ in batch] for batch in chat_rig.memory.extracted] == [
        ["question 0", "question 1"], ["question 2", "question 3"],
    ]
    assert engine.session is not None and engine.session.extracted_through == 4


async def test_finish_extracts_what_is_left(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(extract_every_turns=0)
    await engine.ask("I live in Lisbon.")
    await engine.drain(timeout=5)
    assert chat_rig.memory.extracted == []  # 0 = only at exit
    await engine.finish(timeout=5)
    assert chat_rig.memory.extracted == [[("I live in Lisbon.", "echo: I live in Lisbon.")]]
    await engine.finish(timeout=5)
    assert len(chat_rig.memory.extracted) == 1  # nothing new: nothing extracted again


async def test_an_answer_cut_off_at_the_length_limit_is_marked(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat("The first half of a long", done_reason="length")
    done = await chat_rig.make().ask("explain everything")
    assert isinstance(done, Done) and done.turn.status == "complete"
    assert done.turn.truncated is True
    assert chat_rig.store.turn(done.turn.id).truncated is True
    chat_rig.fake.script_chat("Short and whole.")
    done = await chat_rig.make().ask("and briefly?")
    assert isinstance(done, Done) and done.turn.truncated is False


async def test_extract_pending_runs_extraction_now_once(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(extract_every_turns=0)
    assert await engine.extract_pending(timeout=5) == 0  # no session yet
    await engine.ask("I live in Lisbon.")
    assert await engine.extract_pending(timeout=5) == 1
    assert chat_rig.memory.extracted == [[("I live in Lisbon.", "echo: I live in Lisbon.")]]
    assert await engine.extract_pending(timeout=5) == 0  # nothing new since
    await engine.finish(timeout=5)
    assert len(chat_rig.memory.extracted) == 1  # exit extraction does not repeat it


async def test_extract_pending_failure_leaves_turns_pending(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(extract_every_turns=0)
    await engine.ask("I was born in 1990.")
    chat_rig.memory.fail_extract = True
    assert await engine.extract_pending(timeout=5) == 0
    assert engine.session is not None and engine.session.extracted_through == 0
    chat_rig.memory.fail_extract = False
    assert await engine.extract_pending(timeout=5) == 1


async def test_extract_pending_takes_up_what_an_earlier_run_left(chat_rig: ChatRig) -> None:
    """Quitting the TUI does not extract (it would wait for a model call): the next run's
    idle extraction reads the turns the last one left, in every session, imports aside."""
    earlier = chat_rig.make(extract_every_turns=0)
    await earlier.ask("I live in Lisbon.")
    first = earlier.session
    earlier.new_session()
    await earlier.ask("My cat is called Miso.")
    await earlier.aclose()  # the app quits: nothing extracted
    imported = chat_rig.store.create(model="import")
    chat_rig.store.add_turn(imported.id, "an imported question", "its answer", status="complete")
    assert chat_rig.memory.extracted == []

    later = chat_rig.make(extract_every_turns=0)  # the next run, no session open yet
    assert later.pending_extraction() == 2
    assert await later.extract_pending(timeout=5) == 2
    assert sorted(q for batch in chat_rig.memory.extracted for q, _ in batch) == [
        "I live in Lisbon.", "My cat is called Miso."]
    assert first is not None and chat_rig.store.get(first.id).extracted_through == 1
    assert later.pending_extraction() == 0
    assert await later.extract_pending(timeout=5) == 0


async def test_extract_pending_waits_for_a_job_that_started_meanwhile(
        chat_rig: ChatRig, monkeypatch: pytest.MonkeyPatch) -> None:
    """A background job can start while the idle extraction reads its work from the store (the
    start-up's prompt warm-up, once the model has loaded late on a loaded machine): the
    extraction waits for it and then runs. It returned 0 instead, which the TUI read as
    "nothing left by an earlier run" and never looked again (test_quit_while_busy under
    --stress)."""
    earlier = chat_rig.make(extract_every_turns=0)
    await earlier.ask("I live in Lisbon.")
    await earlier.aclose()
    later = chat_rig.make(extract_every_turns=0)
    loop = asyncio.get_running_loop()
    release = asyncio.Event()
    other: list[str] = []

    async def warming() -> None:
        await release.wait()
        other.append("warmed")

    read = later.background._pending_work

    def read_then_start(extraction: MemoryExtraction) -> list[tuple[str, list[Turn]]]:
        work = read(extraction)
        # Scheduled before the read's result reaches the loop: the job starts first.
        loop.call_soon_threadsafe(lambda: later.jobs.start(warming))
        loop.call_soon_threadsafe(loop.call_later, 0.2, release.set)
        return work

    monkeypatch.setattr(later.background, "_pending_work", read_then_start)
    assert await later.extract_pending(timeout=10) == 1
    assert other == ["warmed"]
    assert [q for batch in chat_rig.memory.extracted for q, _ in batch] == ["I live in Lisbon."]


async def test_closing_never_waits_for_a_store_busy_on_its_thread(chat_rig: ChatRig) -> None:
    """A close waits `patience` at most for the memory thread; the store is then closed on
    that thread once its job ends (SQLite connections belong to their thread)."""
    release = threading.Event()
    closed_on: list[str] = []
    chat_rig.memory.close = lambda: closed_on.append(  # type: ignore[attr-defined]
        threading.current_thread().name)
    engine = chat_rig.make()
    busy = asyncio.get_running_loop().run_in_executor(engine.pools.memory, release.wait, 30)
    started = time.monotonic()
    await engine.aclose(patience=0.1)
    assert time.monotonic() - started < 2
    assert closed_on == []  # still queued behind the busy job
    release.set()
    await busy
    for _ in range(200):
        if closed_on:
            break
        await asyncio.sleep(0.01)
    assert closed_on and closed_on[0].startswith("brain-memory")


async def test_warm_up_prepares_sources_and_model_facts(chat_rig: ChatRig) -> None:
    warmed: list[str] = []
    chat_rig.knowledge.warm_up = lambda: warmed.append("knowledge")  # type: ignore[attr-defined]
    chat_rig.memory.warm_up = lambda: warmed.append("memory")  # type: ignore[attr-defined]
    engine = chat_rig.make()
    await engine.warm_up()
    assert sorted(warmed) == ["knowledge", "memory"]
    assert len(chat_rig.fake.requests_to("/api/show")) == 1
    await engine.ask("hi")
    assert len(chat_rig.fake.requests_to("/api/show")) == 1  # cached


async def test_warm_up_with_ollama_down_does_not_raise(chat_rig: ChatRig) -> None:
    chat_rig.fake.stop()
    await chat_rig.make().warm_up()


async def test_a_second_message_while_answering_is_refused(chat_rig: ChatRig) -> None:
    from assistant.llm.errors import ChatError

    chat_rig.fake.script_chat(["a ", "b ", "c"], chunk_delay=0.2)
    engine = chat_rig.make()
    stream = engine.send("first")
    with pytest.raises(ChatError, match="still being written"):
        engine.send("second")
    with pytest.raises(ChatError, match="still being written"):
        await engine.retry()
    assert isinstance(await stream.result(), Done)
    assert isinstance(await engine.ask("second"), Done)


async def test_tool_results_are_kept_within_the_context(chat_rig: ChatRig) -> None:
    long = "word " * 900  # ~1000 tokens each
    chat_rig.knowledge.items = [knowledge_item(i, long) for i in range(1, 9)]
    engine = chat_rig.make(tools=True, num_ctx=4096, top_k=1)
    chat_rig.fake.script_chat(tool_calls=[
        {"name": "search_knowledge", "arguments": {"query": "words", "top_k": 8}},
    ])
    chat_rig.fake.script_chat("Done.")
    events = await collect(engine.send("find words"))
    [call] = [e for e in events if isinstance(e, ToolCalled)]
    # 4096 - 1024 reserve - ~1200 prompt leaves room for one more whole excerpt, not seven;
    # [1], already in the prompt, is only referred to.
    assert [s.n for s in call.sources] == [2]
    tool_message = chat_rig.fake.last_chat()["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"].count(long.strip()) == 1
    assert tool_message["content"].startswith("[1] notes/doc1.md:10-15 (shown above)")


async def test_options_and_persona_apply_to_the_next_turn(chat_rig: ChatRig) -> None:
    from assistant.llm.errors import ChatError

    engine = chat_rig.make()
    engine.configure(temperature=1, num_ctx=2048, keep_alive="1h")
    engine.set_persona("You are a pirate.")
    await engine.ask("hi")
    request = chat_rig.fake.last_chat()
    # The answer cap: the reserve a 2048-token window leaves (a quarter, budget.plan).
    assert request["options"] == {"temperature": 1.0, "num_ctx": 2048, "num_predict": 512}
    assert request["keep_alive"] == "1h"
    assert request["messages"][0]["content"].startswith("You are a pirate.\n\n## How to answer")
    with pytest.raises(ChatError, match="unknown chat option"):
        engine.configure(colour="red")
    with pytest.raises(ChatError, match="must be a int"):
        engine.configure(num_ctx="big")
    with pytest.raises(ChatError, match="cannot be negative"):
        engine.configure(temperature=-1.0)


async def test_a_session_deleted_elsewhere_starts_a_new_one(chat_rig: ChatRig) -> None:
    engine = chat_rig.make()
    first = await engine.ask("one")
    assert isinstance(first, Done)
    chat_rig.store.delete(first.turn.session_id)
    assert engine.session is None
    second = await engine.ask("two")
    assert isinstance(second, Done)
    assert second.turn.session_id != first.turn.session_id and second.turn.seq == 1


async def test_a_turn_that_cannot_be_saved_still_ends_with_a_clear_error(
    chat_rig: ChatRig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    def locked(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("database is locked")

    engine = chat_rig.make()
    monkeypatch.setattr(chat_rig.store, "add_turn", locked)
    chat_rig.fake.script_chat("An answer.")
    events = await collect(engine.send("hello"))
    final = events[-1]
    assert isinstance(final, Failed) and final.turn is None
    assert "could not save the conversation: database is locked" in str(final.error)
    assert final.partial == "An answer."  # shown, even though it could not be stored


async def test_inline_thinking_is_hidden_from_the_answer(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat(["<th", "ink>\nLet me ", "think.</think>", "\n\nThe answer", "."])
    events = await collect(chat_rig.make().send("q"))
    assert "".join(e.text for e in events if isinstance(e, Token)) == "The answer."
    done = events[-1]
    assert isinstance(done, Done) and done.turn.answer == "The answer."


async def test_an_answer_that_mentions_think_tags_later_is_kept(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat(["Use ", "<think>", " tags."])
    done = await chat_rig.make().ask("q")
    assert isinstance(done, Done) and done.turn.answer == "Use <think> tags."


async def test_a_reply_that_only_looks_like_a_think_tag_is_not_lost(chat_rig: ChatRig) -> None:
    chat_rig.fake.script_chat(["<th"])
    done = await chat_rig.make().ask("q")
    assert isinstance(done, Done) and done.turn.answer == "<th"


async def test_the_prompt_is_the_one_memory_budget_and_marks_only_what_it_kept(
    chat_rig: ChatRig,
) -> None:
    """Recall proposes (top-k applied once, in recall); the prompt's memory share of the real
    window decides what goes in; only those memories are reported as used."""
    text = "The user likes hiking in the mountains near the lake. " * 5
    chat_rig.memory.items = [memory_item(n, f"{n}: {text}", score=1 - n / 10) for n in range(6)]
    engine = chat_rig.make(context_cap=2048, memory_share=0.1, memory_top_k=6)
    chat_rig.fake.script_chat("Hiking.")
    done = await engine.ask("what do I like?")
    assert isinstance(done, Done)
    kept = [m.memory_id for m in done.turn.memories]
    assert 0 < len(kept) < 6
    assert kept == [f"mem-{n}" for n in range(len(kept))]  # best scores first
    await wait_until_async(lambda: chat_rig.memory.used_ids != [])
    assert chat_rig.memory.used_ids == [kept]
