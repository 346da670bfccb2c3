"""The fake Ollama behaves like the real server, not a kinder one.

Each test names the ollama/ollama source (snapshot: /work/.mirror/ollama+ollama/repo, read
with `git -C … show HEAD:<path>`) or issue it reproduces. The app's own tests then meet these
behaviours for free; see tests/fake_ollama_runtime.py for the model behind them.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from tests.fake_ollama import FakeOllamaServer, FakeTiming
from tests.fake_ollama_runtime import DEFAULT_NUM_CTX
from tests.waiting import wait_until

USER = [{"role": "user", "content": "What does git stash do?"}]


def chat(fake: FakeOllamaServer, timeout: float = 10.0, **body: Any) -> dict[str, Any]:
    payload = {"model": "qwen3:4b", "messages": USER, "stream": False, **body}
    response = httpx.post(f"{fake.url}/api/chat", json=payload, timeout=timeout)
    response.raise_for_status()
    return dict(response.json())


def wait_busy(fake: FakeOllamaServer) -> None:
    """Until a request holds the model's slot (recorded is not enough: it may not be there)."""
    wait_until(lambda: "qwen3:4b" in fake.busy(), what="a request to reach the model")


def stream(fake: FakeOllamaServer, **body: Any) -> list[dict[str, Any]]:
    payload = {"model": "qwen3:4b", "messages": USER, **body}
    with httpx.stream("POST", f"{fake.url}/api/chat", json=payload, timeout=10) as r:
        return [json.loads(line) for line in r.iter_lines() if line]


def joined(frames: list[dict[str, Any]], key: str) -> str:
    return "".join(f.get("message", {}).get(key) or "" for f in frames)


# --- reasoning -------------------------------------------------------------------------------

def test_thinking_only_model_with_think_false_puts_untagged_reasoning_in_content(
    fake_ollama: FakeOllamaServer,
) -> None:
    # model/parsers/parsers.go: "qwen3-thinking" = Qwen3Parser{hasThinkingSupport: true,
    # defaultThinking: true}; qwen3.go Init: think false → straight to content, and the
    # prompt already ends with "<think>", so the model's reasoning arrives without an opening
    # tag, followed by </think> (ollama/ollama#12736).
    fake_ollama.script_chat("Stash saves your changes.", thinking="The user asks about stash.")
    frames = stream(fake_ollama, think=False)
    content = joined(frames, "content")
    assert content.startswith("The user asks about stash.")
    assert "<think>" not in content
    assert content.endswith("</think>\n\nStash saves your changes.")
    assert joined(frames, "thinking") == ""


def test_think_absent_means_thinking_on_for_thinking_models(fake_ollama: FakeOllamaServer) -> None:
    # server/routes.go ChatHandler: if the model has CapabilityThinking and req.Think == nil,
    # req.Think = &api.ThinkValue{Value: true} (Ollama >= 0.12.4).
    fake_ollama.script_chat("Stash saves your changes.", thinking="Reasoning here.")
    frames = stream(fake_ollama)
    assert joined(frames, "thinking") == "Reasoning here."
    assert joined(frames, "content") == "Stash saves your changes."
    # The thinking arrives first, as its own chunks.
    assert frames[0]["message"]["thinking"] and not frames[0]["message"]["content"]


def test_unscripted_thinking_model_still_reasons(fake_ollama: FakeOllamaServer) -> None:
    body = chat(fake_ollama)
    assert body["message"]["thinking"].startswith("Okay, the user wrote")
    assert body["message"]["content"] == "echo: What does git stash do?"


def test_switchable_model_with_think_false_does_not_reason(fake_ollama: FakeOllamaServer) -> None:
    # The first Qwen3 release: its template reads .IsThinkSet/.Think and prefills an empty
    # <think></think> for think false.
    fake_ollama.add_model("qwen3:8b", reasoning="hybrid")
    body = chat(fake_ollama, model="qwen3:8b", think=False)
    assert body["message"]["content"] == "echo: What does git stash do?"
    assert "thinking" not in body["message"]


def test_non_thinking_model_refuses_think_true(fake_ollama: FakeOllamaServer) -> None:
    # server/routes.go: `"%q does not support thinking"`, 400.
    fake_ollama.add_model("llama3.2:3b", family="llama", capabilities=("completion", "tools"))
    r = httpx.post(f"{fake_ollama.url}/api/chat",
                   json={"model": "llama3.2:3b", "messages": USER, "think": True})
    assert r.status_code == 400
    assert r.json()["error"] == '"llama3.2:3b" does not support thinking'


def test_inline_reasoning_models_put_tags_in_content(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("deepseek-r1:1.5b", capabilities=("completion",), reasoning="inline")
    body = chat(fake_ollama, model="deepseek-r1:1.5b")
    content = body["message"]["content"]
    assert content.startswith("<think>\n") and "</think>\n\necho: " in content


def test_gpt_oss_cannot_switch_thinking_off(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.add_model("gpt-oss:20b", family="gptoss", reasoning="mandatory")
    body = chat(fake_ollama, model="gpt-oss:20b", think=False)
    assert body["message"]["thinking"]
    assert body["message"]["content"] == "echo: What does git stash do?"


def test_format_with_thinking_on_thinks_first_then_applies_the_schema(
    fake_ollama: FakeOllamaServer,
) -> None:
    # server/routes.go: "structured outputs via double request" — with thinking on, the
    # format is applied only once the model starts its answer.
    schema = {"type": "object", "properties": {"memories": {"type": "array"}},
              "required": ["memories"]}
    frames = stream(fake_ollama, format=schema)
    first_content = next(i for i, f in enumerate(frames) if f["message"]["content"])
    assert all(f["message"].get("thinking") for f in frames[:first_content])
    assert json.loads(joined(frames, "content")) == {"memories": []}
    # stream false: nothing until the end, then thinking and JSON together.
    body = chat(fake_ollama, format=schema)
    assert body["message"]["thinking"] and json.loads(body["message"]["content"])


def test_format_with_think_false_is_json_from_the_first_token(
    fake_ollama: FakeOllamaServer,
) -> None:
    # server/routes.go: forceImmediate when the built-in parser supports thinking and think
    # is false: the grammar constrains the reply at once, even for a thinking-only model.
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    body = chat(fake_ollama, format=schema, think=False)
    assert json.loads(body["message"]["content"]) == {"ok": False}
    assert "thinking" not in body["message"]


def test_num_predict_cuts_json_with_done_reason_length(fake_ollama: FakeOllamaServer) -> None:
    schema = {"type": "object"}
    fake_ollama.script_chat(format_json={"memories": [{"text": f"fact {i}"} for i in range(20)]})
    body = chat(fake_ollama, format=schema, think=False, options={"num_predict": 12})
    assert body["done_reason"] == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(body["message"]["content"])
    assert fake_ollama.generations[-1].output_tokens == 12


def test_num_predict_spent_on_reasoning_leaves_no_answer(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("A summary.", thinking=" ".join(["hmm"] * 50))
    body = chat(fake_ollama, think=False, options={"num_predict": 20})
    assert body["done_reason"] == "length"
    assert "</think>" not in body["message"]["content"]  # cut inside the reasoning


# --- scheduling: load, reload, queue ---------------------------------------------------------

def test_options_are_recorded_and_another_num_ctx_reloads(fake_ollama: FakeOllamaServer) -> None:
    # server/sched.go needsReload: a runner whose options differ (num_ctx included) is
    # reloaded; a request without num_ctx gets the server default (4096).
    chat(fake_ollama, options={"num_ctx": 8192, "temperature": 0.3})
    chat(fake_ollama, options={"num_ctx": 8192})
    assert fake_ollama.chat_options()[0] == {"num_ctx": 8192, "temperature": 0.3}
    assert fake_ollama.loaded() == {"qwen3:4b": 8192}
    assert [(load.reason, load.num_ctx) for load in fake_ollama.loads] == [("cold", 8192)]
    chat(fake_ollama)  # no num_ctx: the default, another size → reload
    assert fake_ollama.loaded() == {"qwen3:4b": DEFAULT_NUM_CTX}
    assert fake_ollama.reloads == 1
    chat(fake_ollama, options={"num_ctx": 8192})
    assert fake_ollama.reloads == 2


def test_num_ctx_is_capped_at_the_models_context(fake_ollama: FakeOllamaServer) -> None:
    # server/sched.go effectiveContext: numCtx > trainCtx → trainCtx.
    fake_ollama.add_model("tiny:1b", context_length=2048, capabilities=("completion",))
    chat(fake_ollama, model="tiny:1b", options={"num_ctx": 8192})
    assert fake_ollama.loaded()["tiny:1b"] == 2048


def test_a_reload_costs_a_full_load(fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.timing = FakeTiming(load_seconds=0.3)
    chat(fake_ollama, options={"num_ctx": 4096})
    chat(fake_ollama, options={"num_ctx": 4096})
    start = time.monotonic()
    chat(fake_ollama, options={"num_ctx": 8192})
    assert time.monotonic() - start >= 0.3
    assert [(load.reason, load.seconds) for load in fake_ollama.loads] == [
        ("cold", 0.3), ("num_ctx", 0.3)]


def test_nothing_is_sent_before_the_first_token(fake_ollama: FakeOllamaServer) -> None:
    # server/routes.go streamResponse: headers are written with the first chunk; load and
    # prompt reading happen before it, in silence.
    fake_ollama.timing = FakeTiming(load_seconds=0.4, prompt_tokens_per_second=100)
    start = time.monotonic()
    with httpx.stream("POST", f"{fake_ollama.url}/api/chat",
                      json={"model": "qwen3:4b", "messages": USER}, timeout=10) as r:
        headers_at = time.monotonic() - start
        assert r.status_code == 200
        list(r.iter_lines())
    generation = fake_ollama.generations[-1]
    assert headers_at >= 0.4 + generation.evaluated_tokens / 100 - 0.05


def test_a_client_that_leaves_during_the_load_aborts_it(fake_ollama: FakeOllamaServer) -> None:
    # server/sched.go: the load waits on llama.WaitUntilRunning(req.ctx); a cancelled request
    # context fails the load and the runner is expired.
    fake_ollama.timing = FakeTiming(load_seconds=2.0)
    with pytest.raises(httpx.ReadTimeout):
        chat(fake_ollama, timeout=0.2)
    wait_until(lambda: fake_ollama.loads)
    assert fake_ollama.loads[-1].aborted
    assert fake_ollama.loaded() == {}
    assert fake_ollama.disconnects[-1].phase == "loading"
    assert fake_ollama.generations == []


def test_prompt_reading_is_proportional_to_tokens_not_in_the_prefix_cache(
    fake_ollama: FakeOllamaServer,
) -> None:
    # llm/llama_server.go sends cache_prompt: true — llama-server reuses the longest common
    # prefix with what its slot holds (the last prompt and what it generated).
    fake_ollama.script_chat("Stash saves your changes.", thinking="")
    system = {"role": "system", "content": "You are a helpful assistant. " * 40}
    first = [system, *USER]
    chat(fake_ollama, messages=first, think=False, options={"num_ctx": 8192})
    cold = fake_ollama.generations[-1]
    assert cold.cached_tokens == 0 and cold.evaluated_tokens == cold.prompt_tokens
    second = [*first, {"role": "assistant", "content": "Stash saves your changes."},
              {"role": "user", "content": "And how do I get them back?"}]
    chat(fake_ollama, messages=second, think=False, options={"num_ctx": 8192})
    warm = fake_ollama.generations[-1]
    # Everything but the template's "<think>\n" prefill after the last assistant header.
    assert warm.cached_tokens >= cold.prompt_tokens - 2
    assert warm.evaluated_tokens < 40  # the answer and the new question only


def test_a_system_message_anywhere_is_rendered_at_the_top(fake_ollama: FakeOllamaServer) -> None:
    # template/template.go collate: all system messages join .System, which chat templates
    # render first — a per-turn system message after the history voids the whole cache.
    system = {"role": "system", "content": "Persona and instructions. " * 30}
    history = [*USER, {"role": "assistant", "content": "It saves changes. " * 20}]
    chat(fake_ollama, think=False, messages=[system, *history,
         {"role": "system", "content": "Material for turn 2."},
         {"role": "user", "content": "and then?"}])
    chat(fake_ollama, think=False, messages=[system, *history,
         {"role": "system", "content": "Material for turn 3."},
         {"role": "user", "content": "and then?"}])
    late = fake_ollama.generations[-1]
    assert late.evaluated_tokens > 80  # diverged in the system block: the history is re-read
    chat(fake_ollama, think=False, messages=[system, *history,
         {"role": "user", "content": "and then?\n\nMaterial for turn 4."}])
    chat(fake_ollama, think=False, messages=[system, *history,
         {"role": "user", "content": "and then?\n\nMaterial for turn 5."}])
    inline = fake_ollama.generations[-1]
    assert inline.evaluated_tokens < 20  # only the new material was read


def test_prompt_eval_count_is_the_whole_prompt_even_when_cached(
    fake_ollama: FakeOllamaServer,
) -> None:
    # llm/llama_server.go promptEvalCount() = CacheN + PromptN (#16428: "preserve Ollama's
    # pre-0.30 full-context prompt_eval_count semantics"); only prompt_eval_duration shows
    # what was read.
    fake_ollama.timing = FakeTiming(prompt_tokens_per_second=1000)
    chat(fake_ollama, think=False)
    body = chat(fake_ollama, think=False, messages=[*USER,
                {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}])
    generation = fake_ollama.generations[-1]
    assert body["prompt_eval_count"] == generation.prompt_tokens
    assert generation.evaluated_tokens < generation.prompt_tokens
    assert body["prompt_eval_duration"] < generation.prompt_tokens / 1000 * 1e9


def test_one_request_at_a_time(fake_ollama: FakeOllamaServer) -> None:
    # envconfig/config.go: OLLAMA_NUM_PARALLEL defaults to 1.
    fake_ollama.script_chat("slow " * 10, chunk_delay=0.03, thinking="")
    fake_ollama.script_chat("second", thinking="")
    first = threading.Thread(target=chat, args=(fake_ollama,), kwargs={"think": False})
    first.start()
    wait_busy(fake_ollama)
    second = threading.Thread(target=chat, args=(fake_ollama,), kwargs={"think": False})
    second.start()
    first.join(10)
    second.join(10)
    slow, fast = fake_ollama.generations
    assert slow.output_tokens >= 10 and fast.started >= slow.finished


def test_a_queued_request_whose_client_left_is_skipped(fake_ollama: FakeOllamaServer) -> None:
    # server/sched.go processPending: "pending request cancelled or timed out, skipping".
    # The first request holds the slot until the second has given up: a slot held for a
    # fixed time (it was 1 s) ran out under load before the second request was even sent,
    # which then got an answer instead of its timeout.
    release = threading.Event()
    fake_ollama.script_chat("slow " * 20, hold=release, thinking="")
    answers: list[dict[str, Any]] = []
    holder = threading.Thread(target=lambda: answers.append(chat(fake_ollama)))
    holder.start()
    wait_busy(fake_ollama)
    with pytest.raises(httpx.ReadTimeout):
        chat(fake_ollama, timeout=0.2)
    wait_until(lambda: fake_ollama.disconnects, what="the server to see the client leave")
    assert [d.phase for d in fake_ollama.disconnects] == ["queued"]
    release.set()
    holder.join(10)
    assert answers and answers[0]["message"]["content"].startswith("slow")
    assert len(fake_ollama.generations) == 1


def test_the_disconnect_log_says_at_which_chunk_the_client_left(
    fake_ollama: FakeOllamaServer,
) -> None:
    fake_ollama.script_chat([f"w{i} " for i in range(40)], chunk_delay=1.0, thinking="")
    with httpx.stream("POST", f"{fake_ollama.url}/api/chat",
                      json={"model": "qwen3:4b", "messages": USER}, timeout=10) as r:
        lines = r.iter_lines()
        for _ in range(3):
            next(lines)
    wait_until(lambda: fake_ollama.disconnects)
    gone = fake_ollama.disconnects[-1]
    assert (gone.phase, gone.chunk) == ("streaming", 3)
    assert fake_ollama.generations == []  # never finished


# --- prompt overflow -------------------------------------------------------------------------

def test_overflow_drops_old_messages_but_keeps_the_system_message(
    fake_ollama: FakeOllamaServer,
) -> None:
    # server/prompt.go chatPrompt: drop messages from the front, collecting system messages
    # from the skipped part, until it fits; always keep the last message.
    system = {"role": "system", "content": "Instructions first."}
    old = [m for i in range(30) for m in (
        {"role": "user", "content": f"question {i} " + "word " * 20},
        {"role": "assistant", "content": f"answer {i} " + "word " * 20},
    )]
    chat(fake_ollama, think=False, messages=[system, *old, *USER], options={"num_ctx": 512})
    generation = fake_ollama.generations[-1]
    assert generation.dropped_messages > 0 and generation.cut_tokens == 0
    assert generation.prompt_tokens <= 512


def test_a_message_longer_than_num_ctx_is_cut_to_its_head_and_tail(
    fake_ollama: FakeOllamaServer,
) -> None:
    # llm/llama_server.go: keep num_keep (4) tokens + the tail, to
    # contextShiftPromptLimit = numCtx - (numCtx - keep) / 2.
    long = [{"role": "user", "content": "word " * 2000}]
    chat(fake_ollama, think=False, messages=long, options={"num_ctx": 1024})
    generation = fake_ollama.generations[-1]
    assert generation.cut_tokens > 0
    assert generation.prompt_tokens == 1024 - (1024 - 4) // 2


# --- /api/show and /api/ps -------------------------------------------------------------------

def test_show_is_as_rich_as_the_real_payload(fake_ollama: FakeOllamaServer) -> None:
    shown = httpx.post(f"{fake_ollama.url}/api/show", json={"model": "qwen3:4b"}).json()
    info = shown["model_info"]
    assert info["qwen3.context_length"] == 262144
    # A second key ending in context_length (YaRN models), and null tokenizer arrays.
    assert info["qwen3.rope.scaling.original_context_length"] == 32768
    assert info["tokenizer.ggml.tokens"] is None
    assert shown["capabilities"] == ["completion", "tools", "thinking"]
    # Thinking-only: the template cannot switch thinking off (no .Think), always opens it.
    assert ".Think" not in shown["template"] and "<think>" in shown["template"]
    fake_ollama.add_model("qwen3:8b", reasoning="hybrid")
    hybrid = httpx.post(f"{fake_ollama.url}/api/show", json={"model": "qwen3:8b"}).json()
    assert "$.IsThinkSet" in hybrid["template"]


def test_ps_lists_loaded_models_with_their_context(fake_ollama: FakeOllamaServer) -> None:
    assert httpx.get(f"{fake_ollama.url}/api/ps").json() == {"models": []}
    chat(fake_ollama, options={"num_ctx": 8192}, keep_alive="10m")
    (running,) = httpx.get(f"{fake_ollama.url}/api/ps").json()["models"]
    assert running["name"] == "qwen3:4b" and running["context_length"] == 8192
    assert running["size_vram"] == 0 and running["expires_at"].endswith("Z")


def test_ps_waits_while_a_model_loads(fake_ollama: FakeOllamaServer) -> None:
    # server/sched.go loadedModels takes each runner's refMu, which load() holds
    # "until running or aborted".
    fake_ollama.timing = FakeTiming(load_seconds=2.0)
    loader = threading.Thread(target=chat, args=(fake_ollama,))
    loader.start()
    wait_until(lambda: fake_ollama.loading())
    assert fake_ollama.loading() == {"qwen3:4b"}
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{fake_ollama.url}/api/ps", timeout=0.2)
    loader.join(10)
    assert httpx.get(f"{fake_ollama.url}/api/ps").json()["models"]


def test_an_empty_chat_loads_the_model_and_keep_alive_zero_unloads(
    fake_ollama: FakeOllamaServer,
) -> None:
    # server/routes.go: len(req.Messages) == 0 → JSON {"done_reason": "load"} after
    # scheduling the runner (with the request's options).
    r = httpx.post(f"{fake_ollama.url}/api/chat",
                   json={"model": "qwen3:4b", "messages": [], "options": {"num_ctx": 8192}})
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["done_reason"] == "load"
    assert fake_ollama.loaded() == {"qwen3:4b": 8192}
    r = httpx.post(f"{fake_ollama.url}/api/chat",
                   json={"model": "qwen3:4b", "messages": [], "keep_alive": 0})
    assert r.json()["done_reason"] == "unload"
    assert fake_ollama.loaded() == {}


def test_keep_alive_zero_unloads_after_the_request(fake_ollama: FakeOllamaServer) -> None:
    # server/sched.go: the runner's expiry (keep_alive 0 = at once) runs when the scheduler
    # hears the request finished — after the reply's last byte, so the client may be first.
    chat(fake_ollama, keep_alive=0)
    wait_until(lambda: not fake_ollama.loaded())
    assert fake_ollama.loaded() == {}


def test_client_gone_detection_needs_no_data_from_the_client() -> None:
    from tests.fake_ollama import _client_gone

    a, b = socket.socketpair()
    try:
        assert not _client_gone(a)
        b.close()
        assert _client_gone(a)
    finally:
        a.close()
