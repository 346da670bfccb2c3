"""What the UI adds when a small model's answer says nothing of its grounding (issue 21 item 7):
no [n] at all, or an answer from its own knowledge after a search that found nothing."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from assistant.chat.answer_notes import NONE_CITED, OWN_KNOWLEDGE, answer_notes, disclaims_files
from assistant.sessions.turn import Source, Turn
from tests.fixtures.chat import knowledge_item


def turn(answer: str, *, cited: bool = False, low: bool = False, sources: bool = True) -> Turn:
    found = (Source(1, knowledge_item(1), cited=cited),) if sources else ()
    return Turn(1, "s", 1, "q", answer, "complete", time.time(), low_confidence=low,
                sources=found)


def test_an_answer_citing_none_of_its_sources_says_so() -> None:
    assert answer_notes(turn("Use tar -x.")) == (NONE_CITED,)
    assert answer_notes(turn("Use tar -x [1].", cited=True)) == ()
    assert answer_notes(turn("Hello!", sources=False)) == ()


def test_an_answer_from_the_models_own_knowledge_after_nothing_was_found() -> None:
    assert answer_notes(turn("Sydney.", low=True, sources=False)) == (OWN_KNOWLEDGE,)
    assert answer_notes(turn("Sydney.", low=True)) == (NONE_CITED, OWN_KNOWLEDGE)
    said = "I did not find this in your files; from general knowledge: Canberra."
    assert answer_notes(turn(said, low=True, sources=False)) == ()
    failed = replace(turn("", low=True), status="failed")
    assert answer_notes(failed) == ()


@pytest.mark.parametrize("answer", [
    "Your files don't mention it, but the capital is Canberra.",
    "I couldn't find that in your notes.",
    "This is not in your files. Canberra is the capital.",
    "None of the excerpts cover this; generally, Canberra.",
    "There is no relevant information in the excerpts.",
    "你的文件中没有相关内容，根据常识，首都是堪培拉。",
    "没有找到相关的笔记。",
])
def test_answers_that_say_they_are_not_from_the_files(answer: str) -> None:
    assert disclaims_files(answer)


@pytest.mark.parametrize("answer", [
    "The capital of Australia is Sydney.", "澳大利亚的首都是悉尼。",
    "Run `tar -xf archive.tar` to extract the files.",
])
def test_answers_that_do_not(answer: str) -> None:
    assert not disclaims_files(answer)
