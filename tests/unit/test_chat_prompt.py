"""Prompt assembly: section order, labels, numbering, trimming, low confidence."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

import pytest

from assistant.chat.budget import ContextOverflow
from assistant.chat.prompt import (
    KNOWLEDGE_LABEL,
    LOW_CONFIDENCE_NOTE,
    MEMORY_LABEL,
    PROFILE_LABEL,
    SUMMARY_LABEL,
    HistoryTurn,
    PromptInputs,
    assemble,
)
from assistant.sessions.turn import MemoryItem, Retrieval
from tests.fixtures.chat import knowledge_item, memory_item

SNAPSHOTS = Path(__file__).parent / "snapshots"
PERSONA = "You are second-brain, a test persona."


def words(text: str) -> int:
    """A predictable counter for budget tests: one token per whitespace-separated word."""
    return len(text.split())


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text


class Overrides(TypedDict, total=False):
    """The PromptInputs fields a test sets instead of full_inputs()'s."""

    message: str
    memories: Sequence[MemoryItem] | None
    retrieval: Retrieval | None
    summary: str
    history: Sequence[HistoryTurn]
    tools: Sequence[Mapping[str, Any]]
    profile: str


def full_inputs(**overrides: Unpack[Overrides]) -> PromptInputs:
    full = PromptInputs(
        persona=PERSONA,
        message="How do I keep uncommitted work aside in git?",
        memories=[
            memory_item(1, "Prefers short answers with examples.", kind="preference"),
            memory_item(2, "Works mostly on Linux.", kind="fact", score=0.5),
        ],
        retrieval=Retrieval(
            "git stash",
            (
                knowledge_item(1, "git stash push -m 'msg' saves your changes.",
                               heading="git stash > Push", relpath="tldr/git-stash.md"),
                knowledge_item(2, "git worktree add ../dir creates a second checkout.",
                               heading="git worktree", relpath="tldr/git-worktree.md",
                               score=0.6),
            ),
            low_confidence=False,
        ),
        summary="Earlier the user asked about branches; we covered git switch.",
        history=[
            HistoryTurn("What does git switch do?", "It changes branches [1]."),
            HistoryTurn("And restore?", "It restores files", interrupted=True),
        ],
    )
    return replace(full, **overrides)


def test_full_prompt_snapshot() -> None:
    prompt = assemble(full_inputs(), window=8192, answer_reserve=1024)
    check_snapshot("chat_prompt_full.txt", prompt.render())
    assert [m.role for m in prompt.messages] == [
        "system", "user", "user", "assistant", "user", "assistant", "user"
    ]
    assert [s.n for s in prompt.sources] == [1, 2]
    assert prompt.history_turns == 2 and prompt.dropped_turns == 0


def test_sections_come_in_the_fixed_order() -> None:
    prompt = assemble(full_inputs(), window=8192, answer_reserve=1024)
    system = prompt.messages[0].content
    assert system.index(PERSONA) == 0
    assert prompt.messages[1].content.startswith(SUMMARY_LABEL)  # opens the conversation
    last = prompt.messages[-1].content
    assert last.startswith(full_inputs().message + "\n\n")  # the question, then its material
    positions = [last.index(label) for label in (MEMORY_LABEL, KNOWLEDGE_LABEL)]
    assert positions == sorted(positions)
    assert last.index(
        '<excerpt n="1" file="tldr/git-stash.md:10-15" heading="git stash > Push">'
    ) < last.index('<excerpt n="2" file="tldr/git-worktree.md')


def test_the_system_message_is_the_same_bytes_every_turn() -> None:
    # Ollama's prompt cache is a common prefix: per-turn material must never reach it.
    first = assemble(full_inputs(), window=8192, answer_reserve=1024)
    other = full_inputs(
        message="And worktrees?", memories=[memory_item(3, "Uses zsh.")],
        retrieval=Retrieval("wt", (knowledge_item(3, "other text"),), True),
        history=[*full_inputs().history, HistoryTurn("How do I keep …?", "Stash it [1].")],
    )
    second = assemble(other, window=8192, answer_reserve=1024)
    assert first.messages[0] == second.messages[0]
    # The earlier turns come out exactly as before: a new turn re-reads only what is new.
    assert first.messages[:-1] == second.messages[: len(first.messages) - 1]


def test_the_profile_is_part_of_the_system_message() -> None:
    prompt = assemble(full_inputs(profile="A nurse in Porto who likes short answers."),
                      window=8192, answer_reserve=1024)
    system = prompt.messages[0].content
    assert system.endswith(f"{PROFILE_LABEL}\nA nurse in Porto who likes short answers.")


def test_tool_specs_count_in_the_budget() -> None:
    specs = [{"type": "function", "function": {"name": "f", "description": "word " * 300}}]
    without = assemble(full_inputs(), window=8192, answer_reserve=1024, counter=words)
    with_tools = assemble(full_inputs(tools=specs), window=8192, answer_reserve=1024,
                          counter=words)
    assert with_tools.tokens["fixed"] - without.tokens["fixed"] >= 300
    assert "search_knowledge" in with_tools.messages[0].content  # told how to use them


def test_low_confidence_snapshot() -> None:
    retrieval = Retrieval(
        "quantum", (knowledge_item(1, "Unrelated text about cooking.", score=0.1),), True
    )
    prompt = assemble(
        full_inputs(retrieval=retrieval, memories=[], summary="", history=[]),
        window=8192, answer_reserve=1024,
    )
    check_snapshot("chat_prompt_low_confidence.txt", prompt.render())
    material = prompt.messages[-1].content
    knowledge = material[material.index(KNOWLEDGE_LABEL):]
    assert knowledge.startswith(f"{KNOWLEDGE_LABEL}\n{LOW_CONFIDENCE_NOTE}")
    assert "(nothing relevant remembered)" in material


def test_knowledge_and_memory_off() -> None:
    prompt = assemble(
        full_inputs(retrieval=None, memories=None, summary="", history=[]),
        window=8192, answer_reserve=1024,
    )
    material = prompt.messages[-1].content
    assert "(knowledge search is off for this question" in material
    assert "(memory is off for this question)" in material
    assert prompt.sources == ()
    assert all(SUMMARY_LABEL not in m.content for m in prompt.messages)


def test_no_hits_says_so() -> None:
    prompt = assemble(
        full_inputs(retrieval=Retrieval("x", (), False)), window=8192, answer_reserve=1024
    )
    assert "(no excerpts matched this question)" in prompt.messages[-1].content


def test_over_budget_knowledge_drops_lowest_scores_and_renumbers() -> None:
    long = "word " * 300
    items = (
        knowledge_item(1, long, score=0.3),
        knowledge_item(2, long, score=0.9),
        knowledge_item(3, long, score=0.6),
    )
    # knowledge cap: 45% of 1500 = 675 words → two of the three ~310-word blocks fit.
    prompt = assemble(
        full_inputs(retrieval=Retrieval("q", items, False), memories=[], history=[],
                    summary=""),
        window=1500, answer_reserve=100, counter=words,
    )
    assert [(s.n, s.item.chunk_id) for s in prompt.sources] == [(1, "chunk-2"), (2, "chunk-3")]
    assert prompt.dropped_sources == 1
    material = prompt.messages[-1].content
    assert "\n[3] " not in material
    # Whole items only: every kept excerpt appears complete.
    assert material.count(long.strip()) == 2
    assert prompt.tokens["knowledge"] <= prompt.budget.knowledge


def test_over_budget_memories_drop_lowest_scores() -> None:
    memories = [memory_item(i, "fact " * 60, score=s) for i, s in enumerate([0.2, 0.9, 0.5])]
    prompt = assemble(
        full_inputs(memories=memories, retrieval=None, history=[], summary=""),
        window=600, answer_reserve=50, counter=words,
    )  # memory cap: 25% of 600 = 150 words → two 63-word lines
    assert [m.memory_id for m in prompt.memories] == ["mem-1", "mem-2"]
    assert prompt.dropped_memories == 1


def test_history_keeps_the_newest_turns_that_fit() -> None:
    history = [HistoryTurn(f"question {i} " + "x " * 150, f"answer {i}") for i in range(6)]
    prompt = assemble(
        full_inputs(history=history, retrieval=None, memories=[], summary=""),
        window=1000, answer_reserve=100, counter=words,
    )
    kept = prompt.history_turns
    assert 0 < kept < 6
    assert prompt.dropped_turns == 6 - kept
    user_messages = [m.content for m in prompt.messages if m.role == "user"]
    assert user_messages[0].startswith(f"question {6 - kept} ")
    assert user_messages[-1].startswith(full_inputs().message + "\n\n")
    assert prompt.total_tokens <= prompt.budget.window - prompt.budget.answer_reserve


def test_unused_knowledge_budget_goes_to_history() -> None:
    history = [HistoryTurn("q " * 100, "a " * 100) for _ in range(4)]
    without = assemble(
        full_inputs(history=history, retrieval=Retrieval("q", (), False), memories=[],
                    summary=""),
        window=1200, answer_reserve=100, counter=words,
    )
    # 45% cap would leave room for 2 turns; with no knowledge all 4 fit in the rest.
    assert without.history_turns == 4


def test_message_too_long_for_the_window_overflows() -> None:
    with pytest.raises(ContextOverflow):
        assemble(full_inputs(message="word " * 5000), window=2048, answer_reserve=256,
                 counter=words)


def test_interrupted_answers_are_marked_in_history() -> None:
    prompt = assemble(full_inputs(), window=8192, answer_reserve=1024)
    assistant = [m.content for m in prompt.messages if m.role == "assistant"]
    assert assistant[1].endswith("[answer interrupted by the user]")
