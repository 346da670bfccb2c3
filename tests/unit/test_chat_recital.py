"""Excerpts a model recites (issue 21): their copied headers are not citations, and what goes
back as history is the answer, not the recited material."""

from __future__ import annotations

from assistant.chat.events import Done
from assistant.chat.prompt import source_block
from assistant.chat.recital import RECITED, history_turn, recited_spans, without_recital
from assistant.sessions.turn import Source
from tests.fixtures.chat import ChatRig, knowledge_item

OD = ("od dumps files in octal and other formats. Display the file using the default "
      "settings: octal format, 8 bytes per line, byte offsets in octal, and duplicate lines "
      "replaced with an asterisk.")
ZIP = ("zip packages and compresses files into zip archives. Add files or directories to a "
       "specific archive, recursively, and exclude the files matching a pattern.")


def sources() -> list[Source]:
    return [Source(1, knowledge_item(1, OD, heading="od", relpath="tldr/od.md")),
            Source(2, knowledge_item(2, ZIP, heading="zip", relpath="tldr/zip.md"))]


def test_a_recited_excerpt_and_its_old_style_header_are_found() -> None:
    answer = f"[1] tldr/od.md:10-15 — od\n{OD}\n\n[2] tldr/zip.md:20-25 — zip\n{ZIP}"
    assert without_recital(answer, sources()) == ""
    assert recited_spans(answer, sources()) == [(0, len(answer))]


def test_a_recited_fenced_excerpt_is_found() -> None:
    answer = "\n\n".join(source_block(s.n, s.item) for s in sources())
    assert without_recital(answer, sources()) == ""


def test_an_answer_in_its_own_words_is_untouched() -> None:
    answer = ("Use `od -c file` to see characters [1]; for an archive, `zip -r out.zip dir` "
              "adds a directory recursively [2]. The default output is octal, 8 bytes per line.")
    assert recited_spans(answer, sources()) == []
    assert without_recital(answer, sources()) == answer


def test_chinese_recital_is_found_by_characters() -> None:
    text = ("压缩文件并把它们放进一个归档文件里，"
            "可以递归地添加整个目录，也可以排除匹配某个模式的文件。")
    source = [Source(1, knowledge_item(1, text))]
    answer = f"好的：{text}希望有帮助 [1]"
    assert without_recital(answer, source) == "好的：希望有帮助 [1]"


async def test_copied_headers_are_not_citations_and_history_gets_the_answer_only(
    chat_rig: ChatRig,
) -> None:
    chat_rig.knowledge.items = [s.item for s in sources()]
    recital = (f"Here is what I found:\n[1] tldr/od.md:10-15 — od\n{OD}\n\n"
               f"[2] tldr/zip.md:20-25 — zip\n{ZIP}")
    chat_rig.fake.script_chat(recital, thinking="")
    engine = chat_rig.make()
    done = await engine.ask("how do I dump a file in octal?")
    assert isinstance(done, Done)
    assert done.turn.answer == recital  # shown as the model wrote it
    assert done.turn.citations == ()  # the copied `[1] …` headers cite nothing
    stored = engine.turns()[-1]
    assert stored.citations == ()
    assert history_turn(stored).answer == f"Here is what I found:\n{RECITED}"
    chat_rig.fake.script_chat("Sure.", thinking="")
    await engine.ask("and how do I zip a directory?")
    sent = chat_rig.fake.last_chat()["messages"]
    previous_answer = sent[-2]
    assert previous_answer["role"] == "assistant"
    assert OD not in previous_answer["content"] and "tldr/od.md" not in previous_answer["content"]


async def test_a_real_citation_after_a_quoted_passage_still_counts(chat_rig: ChatRig) -> None:
    chat_rig.knowledge.items = [s.item for s in sources()]
    chat_rig.fake.script_chat(f"The page says: {OD} So use `od -c` [1].", thinking="")
    done = await chat_rig.make().ask("how do I dump a file in octal?")
    assert isinstance(done, Done) and [s.n for s in done.turn.citations] == [1]
