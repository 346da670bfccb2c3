"""The dense query leaves out the words of nearly every turn (assistant/conversations/topic.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from assistant.conversations.importing import import_conversations
from assistant.conversations.index import ConversationIndex
from assistant.conversations.search import SearchSettings, search_conversations
from assistant.conversations.topic import topic_text

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=UTC)


def common(*terms: str) -> Callable[[Sequence[str]], set[str]]:
    def lookup(tokens: Sequence[str]) -> set[str]:
        return {t for t in tokens if t in terms}
    return lookup


def test_words_found_everywhere_leave_the_dense_query() -> None:
    assert topic_text("What did Caroline research?", common("carolin")) == "What did research?"
    # a possessive is the name too; stop words stay, as the model reads a question
    assert topic_text("What is Caroline's identity?", common("carolin")) == "What is identity?"


def test_nothing_common_or_nothing_left_keeps_the_question() -> None:
    assert topic_text("What did Caroline research?", common()) == "What did Caroline research?"
    assert topic_text("What did Caroline do?", common("carolin")) == "What did Caroline do?"
    assert topic_text("", common("carolin")) == ""


def line(role: str, text: str, n: int) -> str:
    return json.dumps({"session": "chat", "role": role, "text": text,
                       "created_at": f"2026-03-01T09:{n:02d}:00Z", "ref": f"r{n}"})


# A chat between two people, imported: every line starts with its speaker's name.
SAID = [
    ("Caroline: Caroline here, hi Mel", "Melanie: Hi Caroline, Caroline, good to see you"),
    ("Caroline: I research adoption agencies", "Melanie: Wow, tell me more"),
    ("Caroline: The weather is nice", "Melanie: Caroline, it is sunny"),
    ("Caroline: Going hiking soon", "Melanie: Enjoy it"),
]


@pytest.fixture
def chat(conversation_index: ConversationIndex) -> ConversationIndex:
    lines = [line(role, text, 2 * i + j) for i, pair in enumerate(SAID)
             for j, (role, text) in enumerate(zip(("user", "assistant"), pair, strict=True))]
    report, errors = import_conversations(conversation_index, lines, name="chat")
    assert not errors and report.turns == 4
    return conversation_index


def test_a_name_in_every_turn_does_not_decide_the_dense_ranking(chat: ConversationIndex) -> None:
    dense_only = SearchSettings(keyword_weight=0.0, context_share=0.0)
    hits = search_conversations(chat, "What did Caroline research", now=NOW, top_k=4,
                                settings=dense_only).hits
    assert hits[0].refs == ("r2", "r3")
    # the shown cosine is the question's as asked: the greeting full of the name is closer
    by_ref = {h.refs[0]: h for h in hits}
    assert by_ref["r0"].vector is not None and by_ref["r2"].vector is not None
    assert by_ref["r0"].vector > by_ref["r2"].vector
    assert chat.common_terms(["carolin", "research"]) == {"carolin"}
