"""Chatter filtering and explicit "remember that …" requests (secrets: test_memory_secrets)."""

from __future__ import annotations

import pytest

from assistant.memory.explicit import explicit_memory
from assistant.memory.filters import chatter_reason
from assistant.memory.model import MemoryType


@pytest.mark.parametrize(
    "text",
    ["hi", "Thanks!", "ok thanks", "你好", "谢谢！", "What time is it in Tokyo?",
     "can you help me with this?", "yes", "hmm ok", "Good morning everyone"],
)
def test_chatter_is_rejected(text: str) -> None:
    assert chatter_reason(text) is not None


def test_transient_only_matters_for_durable_types() -> None:
    text = "The user is tired right now"
    assert chatter_reason(text, MemoryType.FACT) == "transient"
    assert chatter_reason(text, MemoryType.EPISODE) is None


@pytest.mark.parametrize(
    "text",
    ["The user works as a nurse in Leeds", "用户喜欢简短的回答", "Prefers answers in metric units"],
)
def test_durable_statements_pass(text: str) -> None:
    assert chatter_reason(text) is None


@pytest.mark.parametrize(
    ("utterance", "expected"),
    [
        ("Remember that I prefer metric units", "I prefer metric units."),
        ("please remember: my daughter is called Ana.", "My daughter is called Ana."),
        ("Don't forget that I'm vegetarian!", "I'm vegetarian."),
        ("记住：我喜欢简短的回答", "我喜欢简短的回答。"),
        ("请记住我住在上海", "我住在上海。"),
    ],
)
def test_explicit_requests(utterance: str, expected: str) -> None:
    assert explicit_memory(utterance) == expected


@pytest.mark.parametrize(
    "utterance",
    ["Do you remember what I said?", "remember when we went to Paris?", "I remember it well",
     "remember this", "What is the capital of France"],
)
def test_not_explicit_requests(utterance: str) -> None:
    assert explicit_memory(utterance) is None
