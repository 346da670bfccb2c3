"""Session summaries: what is asked (bounded), reading real models' replies, which sessions are
behind. The request itself (think off, schema, the session's num_ctx and model, capped) is the
chat engine's background request: tests/unit/test_chat_session_summaries.py."""

from __future__ import annotations

import json

import pytest

from assistant.conversations.summaries import (
    MAX_INPUT_CHARS,
    InvalidSummary,
    parse_summary,
    summary_messages,
    transcript,
)

TURNS = [("What did we decide about the kayak trip?", "Lake Tahoe in June, two kayaks.")]
GOOD = {"title": "Kayak trip", "summary": "Decided on Lake Tahoe in June with two kayaks."}


def test_the_messages_ask_for_json_about_the_chat() -> None:
    system, user = summary_messages("Kayak", TURNS)
    assert system["role"] == "system" and "JSON only" in system["content"]
    assert "User: What did we decide" in user["content"]
    assert "Assistant: Lake Tahoe" in user["content"] and "'Kayak'" in user["content"]


def test_the_input_is_bounded_and_keeps_the_first_and_latest_turns() -> None:
    turns = [(f"question {i} " + "word " * 150, f"answer {i} " + "text " * 150)
             for i in range(40)]
    chat = transcript(turns)
    assert len(chat) <= MAX_INPUT_CHARS
    assert chat.startswith("User: question 0 ")
    assert "question 39" in chat and "[…]" in chat and "question 5 " not in chat
    assert len(summary_messages("", turns)[1]["content"]) <= MAX_INPUT_CHARS + 20


def test_reasoning_never_reaches_the_transcript() -> None:
    chat = transcript([("q", "<think>private musing</think>The answer."),
                       ("q2", "untagged reasoning here</think>Second answer.")])
    assert "musing" not in chat and "untagged" not in chat
    assert "The answer." in chat and "Second answer." in chat


@pytest.mark.parametrize("content", [
    json.dumps(GOOD),
    "```json\n" + json.dumps(GOOD) + "\n```",
    "<think>The user wants a summary.</think>\n" + json.dumps(GOOD),
    # qwen3:4b with think:false: untagged reasoning, then a lone closing tag, then the answer
    "Okay, let me write the summary. {not json yet}\n</think>\n\n" + json.dumps(GOOD),
    "Here is the summary:\n" + json.dumps(GOOD) + "\nHope this helps.",
])
def test_parse_summary_copes_with_real_replies(content: str) -> None:
    summary = parse_summary(content)
    assert (summary.title, summary.text) == (GOOD["title"], GOOD["summary"])


@pytest.mark.parametrize("content", ["", "no json here", '{"title": "x"}', '{"summary": "  "}',
                                     "[1, 2]", "{broken"])
def test_parse_summary_rejects_unusable_replies(content: str) -> None:
    with pytest.raises(InvalidSummary):
        parse_summary(content)


def test_long_fields_are_clipped() -> None:
    summary = parse_summary(json.dumps({"title": "t " * 100, "summary": "s " * 2000}))
    assert len(summary.title) <= 80 and len(summary.text) <= 1200
