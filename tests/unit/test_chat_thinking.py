"""Reasoning never shows as answer text: the streaming splitter on every split point."""

from __future__ import annotations

import itertools

import pytest

from assistant.llm.thinking import CLOSE, ReasoningSplitter, strip_reasoning, think_value

# (reply as streamed, untagged expected?, thinking, answer)
CASES = [
    # Thinking-only model with think:false (ollama/ollama#12736): untagged, then </think>.
    ("Okay, the user asks about stash.\n</think>\n\nStash saves work [1].", True,
     "Okay, the user asks about stash.\n", "Stash saves work [1]."),
    # Inline tags (models Ollama cannot parse), leading whitespace.
    ("\n<think>\nLet me see.\n</think>\n\nUse git stash.", False,
     "Let me see.\n", "Use git stash."),
    # A plain answer.
    ("Use git stash pop.", False, "", "Use git stash pop."),
    # A plain answer from a model we expected to reason untagged: held, then given back.
    ("Use git stash pop.", True, "", "Use git stash pop."),
    # Untagged reasoning we did not expect: the answer so far moves to the reasoning.
    ("Hmm, stash.</think>Use pop.", False, "Hmm, stash.", "Use pop."),
    # An answer that talks about the tags is kept whole.
    ("Wrap it in <think> and </think> tags.", False, "",
     "Wrap it in <think> and </think> tags."),
    # Something that only looks like the start of a tag.
    ("<thin", False, "", "<thin"),
    # Reasoning cut off before it ended (no answer at all) when tagged.
    ("<think>still going", False, "still going", ""),
]


def run(chunks: list[str], untagged: bool, *, cut_short: bool = False
        ) -> tuple[str, str, list[str]]:
    """Feed chunks like the UI would show them; the shown answers after each step."""
    splitter = ReasoningSplitter(untagged=untagged)
    thinking = answer = ""
    shown: list[str] = []
    for chunk in [*chunks, None]:
        parts = (splitter.feed(chunk) if chunk is not None
                 else splitter.finish(cut_short=cut_short))
        if parts.replaced is not None:
            thinking, answer = parts.replaced
        else:
            thinking += parts.thinking
            answer += parts.answer
        shown.append(answer)
    return thinking, answer, shown


def splits(text: str) -> list[list[str]]:
    """Every split into two and three pieces, and one character at a time."""
    out = [[text], list(text)]
    for i in range(1, len(text)):
        out.append([text[:i], text[i:]])
    for i, j in itertools.combinations(range(1, len(text)), 2):
        if j - i <= 9:  # three pieces around every tag-sized window
            out.append([text[:i], text[i:j], text[j:]])
    return out


@pytest.mark.parametrize(("reply", "untagged", "thinking", "answer"), CASES)
def test_every_split_point_gives_the_same_parts(
    reply: str, untagged: bool, thinking: str, answer: str
) -> None:
    for chunks in splits(reply):
        got_thinking, got_answer, shown = run(chunks, untagged)
        assert (got_thinking, got_answer) == (thinking, answer), chunks
        for text in shown:  # never a piece of a closing tag in what the user sees
            if CLOSE not in answer:
                assert not any(text.endswith(CLOSE[:n]) for n in range(2, len(CLOSE) + 1)), (
                    chunks, text)


def test_expected_untagged_reasoning_never_shows_as_answer() -> None:
    reply = "The user wants stash.\n</think>\n\nStash it."
    for chunks in splits(reply):
        _, _, shown = run(chunks, True)
        assert all(text in ("", "Stash it."[: len(text)]) or "Stash it.".startswith(text)
                   for text in shown), chunks


def test_untagged_reasoning_cut_off_is_all_reasoning() -> None:
    thinking, answer, _ = run(["The user wants", " stash and"], True, cut_short=True)
    assert (thinking, answer) == ("The user wants stash and", "")


def test_unexpected_untagged_reasoning_is_replaced_once() -> None:
    splitter = ReasoningSplitter()
    assert splitter.feed("Hmm.").answer == "Hmm."
    parts = splitter.feed("</think>\n\nAnswer.")
    assert parts.replaced == ("Hmm.", "Answer.")
    assert splitter.feed(" More.").answer == " More."


@pytest.mark.parametrize(("reply", "answer"), [
    ("reasoning </think>\n\nThe summary.", "The summary."),
    ("<think>x</think>The summary.", "The summary."),
    ("The summary.", "The summary."),
    ("<think>cut off before the end", ""),
    ('{"memories": []}', '{"memories": []}'),
])
def test_strip_reasoning_of_a_complete_reply(reply: str, answer: str) -> None:
    assert strip_reasoning(reply) == answer


def test_think_value_follows_the_setting_and_capabilities() -> None:
    thinking = ("completion", "tools", "thinking")
    assert think_value("auto", thinking) is True
    assert think_value("on", thinking) is True
    assert think_value("off", thinking) is False
    assert think_value("on", ("completion",)) is None  # Ollama would refuse think: true
    assert think_value("auto", ()) is None  # an old server that reports no capabilities
