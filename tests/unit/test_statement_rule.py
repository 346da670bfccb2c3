"""The statement rule: what extraction keeps of a clear self-statement the model found nothing
in — the user's own words restated, typed, validated, deduplicated, its provenance recorded —
and the phrasings it must leave alone (questions, small talk, other people's facts, moods,
remarks about the conversation)."""

from __future__ import annotations

import json

import pytest

from assistant.memory.extraction import extract_memories
from assistant.memory.model import Actor, MemoryType
from assistant.memory.service import MemoryService
from assistant.memory.statement_rule import RULE_VIA, self_statements
from assistant.memory.store import MemoryStore

F, P, E, R = MemoryType.FACT, MemoryType.PREFERENCE, MemoryType.EPISODE, MemoryType.PROCEDURE


@pytest.mark.parametrize(("said", "kept"), [
    ("I moved to Berlin in April and I teach maths at a school.",
     [("The user moved to Berlin in April.", F), ("The user teaches maths at a school.", F)]),
    ("I'm vegetarian.", [("The user is vegetarian.", F)]),
    ("I'm allergic to peanuts", [("The user is allergic to peanuts.", F)]),
    ("I prefer short answers without bullet points.",
     [("The user prefers short answers without bullet points.", P)]),
    ("I always run the tests before I commit.",
     [("The user always runs the tests before they commit.", R)]),
    ("I started learning Japanese last year.",
     [("The user started learning Japanese last year.", E)]),
    ("My name is Sam.", [("The user's name is Sam.", F)]),
    ("I've lived in Leeds for ten years, but I grew up in Cork.",
     [("The user has lived in Leeds for ten years.", F), ("The user grew up in Cork.", F)]),
    ("我住在上海，在一家银行工作。", [("用户住在上海，在一家银行工作。", F)]),
    ("我喜欢简短的回答", [("用户喜欢简短的回答。", P)]),
])
def test_a_clear_self_statement_is_restated_clause_by_clause(
        said: str, kept: list[tuple[str, MemoryType]]) -> None:
    assert self_statements(said) == kept


@pytest.mark.parametrize("said", [
    # questions and requests, whatever their form
    "How do I extract a tar.gz file?", "I need to know how to rebase", "I'm looking for the "
    "backup script", "I want to learn Rust", "I can't figure out the config", "我想知道怎么解压",
    "请告诉我磁盘空间", "What is the capital of Australia?", "remind me what I said about tar",
    # small talk
    "thanks", "hi there", "I see", "ok thank you", "谢谢", "你好",
    # other people's facts, and documents'
    "My sister is a nurse.", "My boss prefers tabs.", "The server moved to rack 4.",
    "Ana lives in Porto.", "我的儿子叫小明。", "他住在北京。",
    # moods, opinions, the moment, the conversation
    "I'm tired.", "I'm so bored", "I think so.", "I agree.", "I tried that and it failed.",
    "I ran your command and nothing happened", "I'll try it later.", "I'd rather not",
    "I'm back", "我觉得不错。", "我累了。", "I'm busy right now.",
])
def test_anything_else_is_left_to_the_model(said: str) -> None:
    assert self_statements(said) == []


def test_the_rule_fills_in_only_where_the_model_found_nothing() -> None:
    turns = ["I moved to Berlin in April.", "I'm vegetarian.", "How do I list files?"]
    reply = {"memories": [{"text": "The user is vegetarian", "type": "fact", "turn": 2,
                           "key": "diet", "confidence": 0.9, "importance": 0.6}]}
    result = extract_memories(turns, chat_fn=lambda m, s: json.dumps(reply))
    assert [(m.text, m.by_rule, m.source_turn) for m in result.memories] == [
        ("The user is vegetarian", False, 1), ("The user moved to Berlin in April.", True, 0)]
    assert result.memories[1].source_text == turns[0]
    assert result.memories[1].type is MemoryType.FACT


def test_a_turn_repeating_a_covered_turn_is_covered() -> None:
    """The same message twice in one batch (asked again after a killed run): the model's
    memories grounded in one of them cover both; the rule adds nothing."""
    said = "My NAS is vaultbox and I back up with restic."
    reply = {"memories": [{"text": "The user's NAS is called vaultbox.", "type": "fact",
                           "turn": 2, "key": "nas_name", "confidence": 0.9,
                           "importance": 0.6}]}
    result = extract_memories([said, said], chat_fn=lambda m, s: json.dumps(reply))
    assert [(m.text, m.by_rule) for m in result.memories] == [
        ("The user's NAS is called vaultbox.", False)]


def test_no_rule_memory_when_the_model_could_not_be_asked() -> None:
    def down(messages, schema):
        raise ConnectionError("refused")

    result = extract_memories(["I'm vegetarian."], chat_fn=down)
    assert result.memories == [] and "model call failed" in (result.error or "")


def test_a_secret_in_a_statement_is_not_stored_by_the_rule() -> None:
    result = extract_memories(["I use the password hunter2-Blue!9 for my bank."],
                              chat_fn=lambda m, s: '{"memories": []}')
    assert result.memories == []
    assert [text for text, _ in result.rejected] == ["[redacted]"]


def test_stored_like_any_memory_with_the_rule_in_its_history(memory_store: MemoryStore) -> None:
    service = MemoryService(memory_store, chat_fn=lambda m, s: '{"memories": []}')
    first = service.extract(["I moved to Berlin in April and I teach maths at a school."],
                            session_id="s1", turn_ids=["t1"])
    assert [(m.text, m.type, m.source) for m in first.added] == [
        ("The user moved to Berlin in April.", MemoryType.FACT, "t1"),
        ("The user teaches maths at a school.", MemoryType.FACT, "t1")]
    events = memory_store.history(first.added[0].id)
    assert [(e.actor, e.via) for e in events] == [(Actor.ASSISTANT, RULE_VIA)]
    # The same statement in a later session: known, not stored twice.
    again = service.extract(["I teach maths at a school."])
    assert again.added == []
    assert [text for text, why in again.skipped if "duplicate" in why] == [
        "The user teaches maths at a school."]
    # A memory the model wrote records no rule.
    model = MemoryService(memory_store, chat_fn=lambda m, s: json.dumps({"memories": [
        {"text": "The user is vegetarian", "type": "fact", "turn": 1, "key": None,
         "confidence": 0.9, "importance": 0.6}]}))
    added = model.extract(["I'm vegetarian."]).added
    assert [e.via for e in memory_store.history(added[0].id)] == [None]


def test_a_number_written_inside_a_word_is_the_users_own() -> None:
    """"before 10am" holds the 10 of "The user hates meetings before 10am." (grounding read
    it as a number the user never said); "8" is still not said by "18"."""
    from assistant.memory.grounding import unsaid_specifics

    said = ["I hate meetings before 10am."]
    assert self_statements(said[0]) == [("The user hates meetings before 10am.", P)]
    kept = extract_memories(said, chat_fn=lambda m, s: '{"memories": []}').memories
    assert [m.text for m in kept] == ["The user hates meetings before 10am."]
    assert unsaid_specifics("The user's daughter is 8.", ["My daughter is 18."]) == ["8"]
    assert unsaid_specifics("The user runs v2.", ["I run v2 now"]) == []
