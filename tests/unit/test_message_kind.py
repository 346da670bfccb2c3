"""What a message needs from the files (issue 21): a statement or small talk gets no excerpts
(at most the best one when it clearly matches), a question — however phrased — gets retrieval."""

from __future__ import annotations

import pytest

from assistant.chat.events import Done, Retrieved
from assistant.chat.prompt import LOW_CONFIDENCE_NOTE, NOT_A_QUESTION
from assistant.message_kind import classify, material_for
from assistant.sessions.turn import Retrieval
from tests.fixtures.chat import ChatRig, knowledge_item

QUESTIONS = [
    "how do I extract a tar.gz",
    "How do I extract a tar.gz?",
    "tar extract gz",  # a keyword query: no verb, no question mark
    "docker compose networking",
    "my docker config",
    "extract tar file",
    "list the tar options",
    "explain git rebase to me",
    "I need to know how to extract a tar file",
    "I want to learn how rsync works",
    "I'd like to compare zip and tar",
    "I'm looking for my notes on kubernetes",
    "I'm trying to set up a VPN",
    "I can't remember the flag for verbose tar",
    "I don't know how to undo a git commit",
    "I'm wondering whether zstd is faster than gzip",
    "I moved to Lisbon. How do I register for taxes",
    "Is there a way to see the file size?",
    "And how do I list its contents without extracting it?",
    "The meeting notes from Friday",
    "continue",
    "please summarise the kubernetes page",
    "怎么解压 tar 文件",
    "tar 解压",
    "我想知道怎么解压tar文件",
    "请解释一下 git rebase",
    "git rebase 是什么",
    "这个命令安全吗",
    "我不知道怎么撤销提交",
    "帮我找一下关于 docker 的笔记",
    "那 zip 呢",
    "继续",
]
STATEMENTS = [
    "I moved to Lisbon last month and work at a bakery",
    "I prefer short answers",
    "I am a vegetarian.",
    "I work as a nurse and I have two kids.",
    "We just adopted a cat named Miso",
    "Last month I started learning Rust",
    "I have a dentist appointment tomorrow",
    "My sister lives in Porto",
    "Today I finished the migration to Postgres",
    "我上个月搬到了里斯本，在一家面包店工作",
    "我喜欢简短的回答。",
    "我女儿今年上小学了",
    "我们下周去东京旅行",
]
SMALL_TALK = [
    "hi", "Hello there :)", "hey!", "thanks!", "Thank you so much!!", "thx", "ok 👍", "cool",
    "got it", "How are you?", "good morning", "bye", "lol", "你好", "谢谢！", "好的", "嗯嗯",
    "哈哈哈", "再见", "你好吗？", "",
]


@pytest.mark.parametrize("message", QUESTIONS)
def test_questions_get_retrieval_whatever_their_form(message: str) -> None:
    assert classify(message) == "question"


@pytest.mark.parametrize("message", STATEMENTS)
def test_statements_about_the_user(message: str) -> None:
    assert classify(message) == "statement"


@pytest.mark.parametrize("message", SMALL_TALK)
def test_small_talk(message: str) -> None:
    assert classify(message) == "small_talk"


def _retrieval(low: bool) -> Retrieval:
    return Retrieval("q", (knowledge_item(1, score=0.5), knowledge_item(2, score=0.8),
                           knowledge_item(3, score=0.6)), low)


def test_a_statement_keeps_only_the_best_excerpt_and_only_when_it_clearly_matches() -> None:
    kept = material_for("statement", _retrieval(low=False))
    assert [i.chunk_id for i in kept.items] == ["chunk-2"] and not kept.low_confidence
    unclear = material_for("statement", _retrieval(low=True))
    assert unclear.items == () and not unclear.low_confidence  # no "say you found nothing"
    assert material_for("small_talk", _retrieval(low=False)).items == ()
    assert material_for("question", _retrieval(low=True)) == _retrieval(low=True)


async def test_a_statement_is_sent_no_unrelated_excerpts(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(n, f"Unrelated page {n} about od and zip.")
                                for n in range(1, 7)]
    chat_rig.knowledge.low_confidence = True
    chat_rig.fake.script_chat("Congratulations on the move!", thinking="")
    events = [e async for e in chat_rig.make().send(
        "I moved to Lisbon last month and work at a bakery")]
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved) and retrieved.sources == ()
    assert not retrieved.low_confidence
    material = chat_rig.fake.last_chat()["messages"][-1]["content"]
    assert "Unrelated page" not in material and LOW_CONFIDENCE_NOTE not in material
    assert NOT_A_QUESTION in material
    done = events[-1]
    assert isinstance(done, Done) and done.turn.sources == () and not done.turn.low_confidence


async def test_small_talk_does_not_search_and_a_question_does(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [knowledge_item(1, "tar -x extracts an archive.")]
    engine = chat_rig.make()
    assert isinstance(await engine.ask("thanks!"), Done)
    assert chat_rig.knowledge.calls == []
    assert "tar -x" not in chat_rig.fake.last_chat()["messages"][-1]["content"]
    assert isinstance(await engine.ask("I need to know how to extract a tar file"), Done)
    assert [c[0] for c in chat_rig.knowledge.calls] == [
        "I need to know how to extract a tar file"]
    assert "tar -x extracts an archive." in chat_rig.fake.last_chat()["messages"][-1]["content"]
