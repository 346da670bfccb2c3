"""Conversation-aware query building (pure: no model call)."""

from __future__ import annotations

import pytest

from assistant.retrieval.query import (
    MAX_QUERY_CHARS,
    build_search_query,
    is_continuation,
    is_follow_up,
)


@pytest.mark.parametrize(
    "message",
    ["and for Chinese files?", "继续", "that one", "what about zip?", "How about the flags?",
     "why?", "Continue.", "那中文文件呢？", "这个怎么用", "how do I undo it", "same for rsync",
     # A full sentence that still points back (issue 21: searched alone, it missed tar.md).
     "And how do I list its contents without extracting it?",
     "can I also compress them with a stronger level than the default one",
     "is there a way to make it print the progress while it runs"],
)
def test_follow_ups_are_recognised(message: str) -> None:
    assert is_follow_up(message)


@pytest.mark.parametrize(
    "message",
    ["how do I extract a tar.gz archive", "git-stash", "ABC-001", "如何压缩文件夹",
     "find files larger than 100 MB in this directory tree recursively", "",
     "how do I make the files in this folder smaller before I send that email to my boss",
     "what is the difference between a hard link and a symbolic link and when is it used"],
)
def test_self_contained_messages_are_not_follow_ups(message: str) -> None:
    assert not is_follow_up(message)


def test_standalone_message_is_searched_as_typed() -> None:
    history = ["how do I extract a tar archive"]
    assert build_search_query("  list docker  containers ", history) == "list docker containers"
    assert build_search_query("and for zip?", []) == "and for zip?"


def test_follow_up_is_prefixed_with_the_topic_turn() -> None:
    history = ["how do I compress a folder with tar", "thanks"]
    # "thanks" is itself not self-contained; the walk goes back to the topic.
    assert build_search_query("and for zip?", ["how do I compress a folder with tar"]) == (
        "how do I compress a folder with tar and for zip?"
    )
    assert build_search_query("what about zip?", history).startswith(
        "how do I compress a folder with tar"
    )


def test_continuation_searches_the_previous_topic_alone() -> None:
    history = ["如何用 tar 解压文件", "继续"]
    assert build_search_query("继续", history) == "如何用 tar 解压文件"
    assert is_continuation("go on") and is_continuation("继续。")


def test_chains_of_follow_ups_stop_at_the_topic_and_are_bounded() -> None:
    history = ["ssh key setup on linux", "and on mac?", "and windows?"]
    query = build_search_query("that one", history)
    assert query == "ssh key setup on linux and on mac? and windows? that one"
    long_topic = "word " * 400
    bounded = build_search_query("and that?", [long_topic.strip()])
    assert len(bounded) <= MAX_QUERY_CHARS
    assert bounded.endswith("and that?")




def test_the_previous_answers_cited_heading_joins_the_topic() -> None:
    import time

    from assistant.chat.retrieval_history import retrieval_history
    from assistant.sessions.turn import Source, Turn
    from tests.fixtures.chat import knowledge_item

    def turn(question: str, heading: str, cited: bool) -> Turn:
        source = Source(1, knowledge_item(1, heading=heading), cited=cited)
        return Turn(1, "s", 1, question, "…", "complete", time.time(), sources=(source,))

    packed = turn("how do I pack a folder into one file?", "tar", cited=True)
    assert retrieval_history([packed], 3) == ["how do I pack a folder into one file? tar"]
    assert build_search_query("and list its contents?", retrieval_history([packed], 3)) == (
        "how do I pack a folder into one file? tar and list its contents?")
    named = turn("how do I extract a tar archive?", "tar", cited=True)
    assert retrieval_history([named], 3) == ["how do I extract a tar archive?"]  # once
    uncited = turn("how do I pack a folder into one file?", "tar", cited=False)
    assert retrieval_history([uncited], 3) == ["how do I pack a folder into one file?"]
    assert retrieval_history([packed], 0) == []
