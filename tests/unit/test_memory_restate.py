"""Explicit memories in the form extraction writes (issue 21): "remember that I prefer short
answers" is stored as "The user prefers short answers.", a preference — not "I prefer short
answers." as a fact, which the chat prompt would present as if the assistant had said it."""

from __future__ import annotations

import pytest

from assistant.memory.model import MemoryType
from assistant.memory.restate import classify, in_third_person
from assistant.memory.service import MemoryService
from assistant.memory.store import MemoryStore

RESTATED = [
    ("I prefer short answers.", "The user prefers short answers."),
    ("I'm vegetarian.", "The user is vegetarian."),
    ("I’m a nurse in Lisbon.", "The user is a nurse in Lisbon."),
    ("My daughter Ana is 7.", "The user's daughter Ana is 7."),
    ("I always run the tests before I commit.",
     "The user always runs the tests before they commit."),
    ("I study physics.", "The user studies physics."),
    ("I watch films with my sister.", "The user watches films with their sister."),
    ("I don't eat meat.", "The user doesn't eat meat."),
    ("I have two cats.", "The user has two cats."),
    ("I moved to Lisbon last month.", "The user moved to Lisbon last month."),
    ("I can read Japanese.", "The user can read Japanese."),
    ("我喜欢简短的回答。", "用户喜欢简短的回答。"),
    ("我的女儿叫安娜。", "用户的女儿叫安娜。"),
    # Not in the first person: kept as said.
    ("The meeting with Bob is on Friday.", "The meeting with Bob is on Friday."),
    ("我们下周去北京。", "我们下周去北京。"),
]


@pytest.mark.parametrize(("said", "stored"), RESTATED)
def test_first_person_becomes_the_user(said: str, stored: str) -> None:
    assert in_third_person(said) == stored


@pytest.mark.parametrize(("text", "kind"), [
    ("The user prefers short answers.", MemoryType.PREFERENCE),
    ("The user hates long meetings.", MemoryType.PREFERENCE),
    ("用户喜欢简短的回答。", MemoryType.PREFERENCE),
    ("The user always runs the tests before they commit.", MemoryType.PROCEDURE),
    ("用户每天早上跑步。", MemoryType.PROCEDURE),
    ("The user moved to Lisbon last month.", MemoryType.EPISODE),
    ("用户去年搬到了上海。", MemoryType.EPISODE),
    ("The user's daughter Ana is 7.", MemoryType.FACT),
    ("用户是素食者。", MemoryType.FACT),
])
def test_types_follow_what_the_statement_is(text: str, kind: MemoryType) -> None:
    assert classify(text) is kind


@pytest.mark.parametrize(("utterance", "text", "kind"), [
    ("remember that I prefer short answers", "The user prefers short answers.",
     MemoryType.PREFERENCE),
    ("Please remember: my daughter Ana is 7", "The user's daughter Ana is 7.", MemoryType.FACT),
    ("记住我是素食者", "用户是素食者。", MemoryType.FACT),
])
def test_remember_that_stores_what_extraction_would(
    memory_store: MemoryStore, utterance: str, text: str, kind: MemoryType,
) -> None:
    memory = MemoryService(memory_store).remember(utterance)
    assert memory is not None and (memory.text, memory.type) == (text, kind)
    assert memory.source_text == utterance  # what the user said stays on record


def test_first_person_memories_of_earlier_versions_are_restated_after_extraction(
    memory_store: MemoryStore,
) -> None:
    """What earlier versions stored for "remember that I …" is rewritten (a recorded update),
    unless the user edited it; memories from other paths are left alone."""
    from assistant.memory.model import Actor, NewMemory

    def old_explicit(said: str, text: str) -> str:
        return memory_store.add(NewMemory(text=text, source_text=said, importance=0.7),
                                actor=Actor.USER).id

    legacy = old_explicit("remember that I prefer short answers", "I prefer short answers.")
    edited = old_explicit("remember that I use vim", "I use vim.")
    memory_store.edit(edited, "I use vim, and neovim at work.")
    typed = memory_store.add(NewMemory(text="I drink green tea every morning"),
                             actor=Actor.USER).id  # `brain memory add`: no source_text
    service = MemoryService(memory_store, chat_fn=lambda m, s: '{"memories": []}')
    outcome = service.extract(["hello there, how are you?"])  # maintenance runs after it
    assert outcome.error is None, outcome
    assert memory_store.get(legacy).text == "The user prefers short answers."
    assert memory_store.get(edited).text == "I use vim, and neovim at work."
    assert memory_store.get(typed).text == "I drink green tea every morning"
    assert service.restate_explicit() == 0  # once
