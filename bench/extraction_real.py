"""Memory extraction and token counts against a REAL model behind an OpenAI-compatible server.

    python -m llama_cpp.server --model <gguf> --host 127.0.0.1 --port 8765 --n_ctx 4096 &
    BRAIN_SHARED=/work/shared python -m bench.extraction_real --url http://127.0.0.1:8765

Not one of `make bench`'s sections (the real-model lane owns starting the server); it measures
the two things the fake cannot tell:

1. Extraction: each statement (English and Chinese) is sent alone, through the app's own prompt,
   schema and validation (`extract_memories`); a memory is *correct* when it holds the words of
   one of the facts the statement states, *hallucinated* otherwise (also: anything stored from
   a question). Rejections are counted by reason.
2. Tokens: tldr pages (English `pages/common`, Chinese `pages.zh/common`) under the chat's
   system message, each sent with `max_tokens: 1`; the server's `usage.prompt_tokens` against
   the app's estimate, raw and calibrated online (`TokenCalibration`: each page is estimated
   with what the earlier ones taught, then teaches).

Prints a JSON summary (and writes it to --out if given).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

# (statement, facts): a memory is correct when it contains every word of one fact. Held apart
# from the real-model lane's own statements (bench/real_model.py): tuned here, checked there.
STATEMENTS: list[tuple[str, list[list[str]]]] = [
    ("I moved to Berlin in April and I teach maths at a school.", [["berlin"], ["math"]]),
    ("I live in a small flat in Leeds with my partner.", [["leeds"], ["flat"]]),
    ("I hate meetings before 10am.", [["meeting"]]),
    ("My daughter Ana is 7.", [["ana"], ["daughter", "7"]]),
    ("I'm vegetarian.", [["vegetarian"]]),
    ("I prefer short answers without bullet points.", [["short"]]),
    ("I work as a nurse at the city hospital.", [["nurse"]]),
    ("I always run the tests before I commit.", [["test"]]),
    ("My wife's name is Clara and we have two cats.", [["clara"], ["cat"]]),
    ("I use Fedora on my laptop and write mostly Rust.", [["fedora"], ["rust"]]),
    ("I'm allergic to peanuts.", [["peanut"]]),
    ("I started learning Japanese in 2023.", [["japanese"]]),
    ("我住在上海，在一家银行工作。", [["上海"], ["银行"]]),
    ("我喜欢简短的回答。", [["简短"]]),
    ("我的儿子叫小明，今年五岁。", [["小明"], ["儿子"]]),
    ("我是素食者。", [["素食"]]),
]
QUESTIONS = [
    "How do I extract a tar.gz file?",
    "What is the capital of Australia?",
    "怎么查看磁盘空间？",
]


def _post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    import httpx

    with httpx.Client(timeout=timeout, trust_env=False) as client:
        response = client.post(f"{url}/v1/chat/completions", json=body)
    if response.status_code >= 400:
        raise RuntimeError(f"{response.status_code}: {response.text[:300]}")
    return dict(response.json())


def openai_chat_fn(url: str, model: str, *, timeout: float = 600.0) -> Any:
    """A ChatFn over /v1/chat/completions with the schema as `response_format` (json_schema,
    falling back to llama-cpp-python's json_object + schema)."""
    from assistant.memory.extraction import NUM_PREDICT

    styles = [
        lambda schema: {"type": "json_schema",
                        "json_schema": {"name": "memories", "schema": schema, "strict": True}},
        lambda schema: {"type": "json_object", "schema": schema},
    ]

    def chat(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        last: Exception | None = None
        for style in list(styles):
            body = {"model": model, "messages": messages, "temperature": 0,
                    "max_tokens": NUM_PREDICT, "response_format": style(schema)}
            try:
                payload = _post(url, body, timeout)
            except RuntimeError as exc:
                last = exc
                styles.remove(style)  # this server does not take it: do not try again
                continue
            return str(payload["choices"][0]["message"].get("content") or "")
        raise RuntimeError(f"no response_format accepted: {last}")

    return chat


def _correct(text: str, facts: list[list[str]]) -> bool:
    lower = text.lower()
    return any(all(word in lower for word in fact) for fact in facts)


def measure_extraction(url: str, model: str) -> dict[str, Any]:
    from assistant.memory.extraction import extract_memories

    chat = openai_chat_fn(url, model)
    rows: list[dict[str, Any]] = []
    reasons: Counter[str] = Counter()
    for statement, facts in [*STATEMENTS, *((q, []) for q in QUESTIONS)]:
        started = time.perf_counter()
        result = extract_memories([statement], chat_fn=chat)
        # The model's memories, and apart from them what the statement rule added
        # (memory/statement_rule.py) where the model found nothing.
        memories = [m.text for m in result.memories if not m.by_rule]
        by_rule = [m.text for m in result.memories if m.by_rule]
        for _, reason in result.rejected:
            reasons[reason.split(" (")[0]] += 1
        rows.append({
            "said": statement, "question": not facts, "memories": memories,
            "correct": [m for m in memories if facts and _correct(m, facts)],
            "by_rule": by_rule,
            "rule_correct": [m for m in by_rule if facts and _correct(m, facts)],
            "rejected": result.rejected, "error": result.error,
            "seconds": round(time.perf_counter() - started, 1),
        })
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    statements = [r for r in rows if not r["question"]]
    stored = sum(len(r["memories"]) for r in rows)
    correct = sum(len(r["correct"]) for r in rows)
    return {
        "statements": len(statements),
        "questions": len(rows) - len(statements),
        "memories_stored": stored,
        "memories_correct": correct,
        "memories_hallucinated": stored - correct,
        "statements_with_a_correct_memory": sum(1 for r in statements if r["correct"]),
        "rule_stored": sum(len(r["by_rule"]) for r in rows),
        "rule_correct": sum(len(r["rule_correct"]) for r in rows),
        "statements_with_a_correct_memory_with_the_rule": sum(
            1 for r in statements if r["correct"] or r["rule_correct"]),
        "questions_with_a_rule_memory": sum(1 for r in rows if r["question"] and r["by_rule"]),
        "questions_with_a_memory": sum(1 for r in rows if r["question"] and r["memories"]),
        "rejected": dict(reasons),
        "errors": sum(1 for r in rows if r["error"]),
        "rows": rows,
    }


def _pages(folder: Path, count: int) -> list[str]:
    pages = sorted(folder.glob("*.md"))
    step = max(1, len(pages) // count)
    return [p.read_text(encoding="utf-8") for p in pages[::step][:count]]


def _prose(page: str) -> str:
    """A tldr page's sentences without its commands and title: Chinese prose, for `zh`."""
    lines = (line.lstrip("-> ").strip() for line in page.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith(("`", "#")))


def server_count(url: str, model: str) -> Any:
    """The server's count of a prompt: `usage.prompt_tokens` of a one-token reply."""

    def count(messages: list[dict[str, str]]) -> int:
        payload = _post(url, {"model": model, "messages": messages, "max_tokens": 1,
                              "temperature": 0}, 600.0)
        return int(payload["usage"]["prompt_tokens"])

    return count


def measure_tokens(real_count: Any, model: str, count: int) -> dict[str, Any]:
    from assistant.chat.calibration import MIN_SAMPLES, TokenCalibration, prompt_split
    from assistant.chat.engine import EngineSettings
    from assistant.chat.prompt import system_message
    from bench.common import tldr_dir

    system = system_message(EngineSettings(host="", model=model).persona, tools=False)
    out: dict[str, Any] = {}
    english, chinese = tldr_dir() / "pages" / "common", tldr_dir() / "pages.zh" / "common"
    sets = {
        "english": [[{"role": "system", "content": system}, {"role": "user", "content": page}]
                    for page in _pages(english, count)],
        "chinese": [[{"role": "system", "content": system}, {"role": "user", "content": page}]
                    for page in _pages(chinese, count)],
        "chinese_prose": [[{"role": "user", "content": _prose(page)}]
                          for page in _pages(chinese, count)],
    }
    for script, prompts in sets.items():
        calibration = TokenCalibration()
        raw: list[float] = []
        calibrated: list[float] = []
        for messages in prompts:
            real = int(real_count(messages))
            split = prompt_split(m["content"] for m in messages)
            raw.append(split.total / real)
            calibrated.append(calibration.estimate(model, split) / real)
            calibration.observe(model, split, real)
        learnt = calibrated[MIN_SAMPLES:]
        out[script] = {
            "pages": len(raw),
            "raw_median": round(statistics.median(raw), 3),
            "raw_min": round(min(raw), 3), "raw_max": round(max(raw), 3),
            "first_page_default": round(calibrated[0], 3),
            "calibrated_median": round(statistics.median(learnt), 3),
            "calibrated_min": round(min(learnt), 3), "calibrated_max": round(max(learnt), 3),
            "calibrated_within_0.9_1.15": round(
                sum(1 for r in learnt if 0.9 <= r <= 1.15) / len(learnt), 3),
            "calibrated_under_count": sum(1 for r in learnt if r < 1.0),
            "factors": {s: round(calibration.factor(model, s), 3) for s in ("latin", "cjk")},
        }
        print(script, json.dumps(out[script]), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.extraction_real")
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--pages", type=int, default=20, help="tldr pages per language")
    parser.add_argument("--skip-tokens", action="store_true")
    parser.add_argument("--skip-extraction", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    summary: dict[str, Any] = {"url": args.url, "model": args.model}
    if not args.skip_extraction:
        summary["extraction"] = measure_extraction(args.url, args.model)
    if not args.skip_tokens:
        summary["tokens"] = measure_tokens(server_count(args.url, args.model), args.model,
                                           args.pages)
    brief = {k: ({kk: vv for kk, vv in v.items() if kk != "rows"} if isinstance(v, dict) else v)
             for k, v in summary.items()}
    print(json.dumps(brief, indent=1, ensure_ascii=False))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
