"""`make test-real`: the real app through the OpenAI-compatible provider against a real model
(SmolLM2-135M-Instruct on llama-cpp-python's server, bench/real_model.py). Opt-in: it needs
`.venv-real` (bench/real_setup.py, ~30 min to build), so without BRAIN_REAL_LANE=1 it is
skipped, and `make test` / CI never run it.

What must hold whatever the model writes: every case completes through the real protocol,
the server's own counts are recorded, and the app's token estimate never under-counts by
more than the calibration allows. The quality numbers (memories, follow-up retrieval, the
cap) are measured and written to bench/results/real_model/cases.json, not asserted here: a
135M model is there to exercise the protocol, not to be judged.
"""

from __future__ import annotations

import os

import pytest

from bench.real_model import DEFAULT_OUT, DEFAULT_VENV, lane_ready, run_lane

pytestmark = pytest.mark.skipif(
    os.environ.get("BRAIN_REAL_LANE") != "1" or lane_ready(DEFAULT_VENV) is None,
    reason="real-model lane: run `make test-real`")


@pytest.mark.timeout(3600)  # 11 cases of a real model: minutes, more under load (not 300 s)
def test_the_real_app_through_the_openai_provider() -> None:
    payload = run_lane(DEFAULT_VENV, DEFAULT_OUT)
    cases = {c["case"]: c for c in payload["cases"]}
    failed = {name: c["error"] for name, c in cases.items() if c["status"] != "complete"}
    assert not failed, failed
    for name, case in cases.items():
        assert case["answer"].strip(), name
        if name == "remember":  # stored and confirmed without a model call
            continue
        assert case["ttft_ms"] is not None, name
        assert case["server_requests"] >= 1, name  # the server's log saw the request
        assert case["prompt_tokens_real"], name
    assert cases["follow_up"]["cached_tokens"] > 0  # `ask -c` found its history cached
    # The token estimate never under-counts, English or Chinese (the server would silently
    # drop the start of a prompt it thought fitted).
    ratios = {name: c["estimate_ratio"] for name, c in cases.items() if c["estimate_ratio"]}
    assert min(ratios.values()) >= 1.0, ratios
    assert ratios.get("zh_question") and ratios.get("zh_statement"), ratios
    # The "remember that" turn stores its memory without asking the model.
    assert cases["remember"]["memories_added"], cases["remember"]
