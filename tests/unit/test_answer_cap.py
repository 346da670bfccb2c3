"""Every answer is capped (issue 21): `num_predict` on every chat request, from
chat.max_answer_tokens or the answer reserve; a turn cut there is marked truncated and
"continue" (`retry`) has the model go on from where it stopped."""

from __future__ import annotations

import pytest

from assistant.chat.budget import Budget, answer_cap
from assistant.chat.events import Done
from assistant.chat.prompt import TRUNCATED_MARK
from assistant.config import ConfigError
from assistant.config_load import config_from_dict
from assistant.sessions.turn import CONTINUE_MESSAGE
from tests.fake_ollama import chat_turn
from tests.fixtures.chat import ChatRig


def _budget(reserve: int) -> Budget:
    return Budget(window=8192, answer_reserve=reserve, fixed=100, memory=0, knowledge=0)


def test_the_cap_is_the_setting_within_the_reserve_the_prompt_left() -> None:
    assert answer_cap(0, _budget(1024)) == 1024  # default: the answer reserve
    assert answer_cap(300, _budget(1024)) == 300
    assert answer_cap(1024, _budget(512)) == 512  # a small window reserved less
    assert answer_cap(0, _budget(0)) == 16  # never an empty answer


@pytest.mark.parametrize(("chat", "message"), [
    ({"max_answer_tokens": 8}, "chat.max_answer_tokens: expected 0 (the answer reserve) or at "
     "least 16, got 8"),
    ({"max_answer_tokens": 2048, "answer_reserve": 1024},
     "chat.max_answer_tokens: expected at most chat.answer_reserve (1024"),
])
def test_a_cap_that_cannot_work_is_a_clear_error(chat: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"chat": chat})
    assert str(err.value).startswith(message)
    assert config_from_dict({"chat": {"max_answer_tokens": 200}}).chat.max_answer_tokens == 200


async def test_every_chat_request_carries_the_cap(chat_rig: ChatRig) -> None:
    engine = chat_rig.make(max_answer_tokens=300)
    for question in ("how do I stash?", "and pop it?"):
        chat_rig.fake.script_chat("An answer.", thinking="")
        assert isinstance(await engine.ask(question), Done)
    turns = [b for b in chat_rig.fake.chat_requests if chat_turn(b)]
    assert len(turns) == 2
    assert [b["options"]["num_predict"] for b in turns] == [300, 300]


async def test_an_answer_cut_at_the_cap_is_truncated_and_continue_goes_on(
    chat_rig: ChatRig,
) -> None:
    engine = chat_rig.make(max_answer_tokens=20)
    long = " ".join(f"word{i}" for i in range(200))
    chat_rig.fake.script_chat(long, thinking="")
    done = await engine.ask("explain tar in detail")
    assert isinstance(done, Done) and done.turn.truncated
    generated = chat_rig.fake.generations[-1]
    assert generated.output_tokens <= 20 and done.turn.answer != long  # the server cut it
    chat_rig.fake.script_chat("and the rest.", thinking="")
    again = await (await engine.retry()).result()
    assert isinstance(again, Done) and again.turn.question == CONTINUE_MESSAGE
    assert not again.turn.truncated
    sent = chat_rig.fake.last_chat()["messages"]
    assert sent[-2]["role"] == "assistant"
    assert sent[-2]["content"] == done.turn.answer + TRUNCATED_MARK  # go on from here
    assert sent[-1]["content"].startswith(CONTINUE_MESSAGE + "\n\n")
    assert [t.question for t in engine.turns()] == ["explain tar in detail", CONTINUE_MESSAGE]
