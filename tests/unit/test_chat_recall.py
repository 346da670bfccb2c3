"""Earlier conversations in chat: recalled into the prompt ([c1]), cited, stored, exported,
searched by the `search_conversations` tool, and summarised in idle time — the real engine, the
real conversation index (hash vectors in memory) and the fake Ollama server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from assistant.chat.engine import ChatEngine
from assistant.chat.events import Done, Retrieved, ToolCalled
from assistant.chat.export import session_markdown
from assistant.chat.service import IndexConversations
from assistant.cli.sessions_cmd import turn_json
from assistant.conversations.index import ConversationIndex
from assistant.conversations.summaries import summary_of
from assistant.sessions.turn import CONVERSATION_DELETED, Recollection
from tests.fakes import HashEmbedder
from tests.fixtures.chat import ChatRig, knowledge_item, memory_item
from tests.fixtures.conversations import ConversationVectors
from tests.unit.test_chat_engine import collect
from tests.waiting import wait_until_async

KAYAK_Q = "Shall we take the kayak out on Saturday or on Sunday?"
KAYAK_A = "Saturday looks calm, so we decided to take the kayak on Saturday morning."


@dataclass
class Recall:
    rig: ChatRig
    index: ConversationIndex
    source: IndexConversations

    def make(self, **overrides: object) -> ChatEngine:
        return self.rig.make(conversations=self.source, **overrides)

    def past_session(self, question: str, answer: str, *, title: str = "Weekend plans",
                     when: float | None = None) -> str:
        """A session stored earlier (by another run), optionally dated `when`."""
        session = self.rig.store.create(title=title)
        turn = self.rig.store.add_turn(session.id, question, answer, status="complete")
        if when is not None:
            with self.rig.store.transaction() as conn:
                conn.execute("UPDATE turns SET created_at = ? WHERE id = ?", (when, turn.id))
        return session.id


@pytest.fixture
def recall(chat_rig: ChatRig) -> Iterator[Recall]:
    embedder = HashEmbedder(dimension=256)
    vectors = ConversationVectors()
    index = ConversationIndex(chat_rig.store, embedder=lambda: embedder,
                              vectors=lambda: vectors)
    yield Recall(chat_rig, index, IndexConversations(lambda: index))


def _is_recap(body: dict) -> bool:
    return "record of a past chat" in body["messages"][0]["content"]


async def test_what_did_we_decide_cites_the_earlier_turn(recall: Recall) -> None:
    earlier = recall.past_session(KAYAK_Q, KAYAK_A)
    recall.rig.memory.items = [memory_item(1, "The user lives near a lake.")]
    recall.rig.knowledge.items = [knowledge_item(1, "Kayak safety checklist.")]
    recall.rig.fake.script_chat("You decided on Saturday morning [c1].")
    engine = recall.make()
    events = await collect(engine.send("What did we decide about the kayak trip?"))

    retrieved = events[0]
    assert isinstance(retrieved, Retrieved) and retrieved.conversations_used
    [c1] = retrieved.conversations
    assert (c1.n, c1.item.session_id, c1.item.title) == (1, earlier, "Weekend plans")
    assert c1.item.question == KAYAK_Q and c1.item.answer == KAYAK_A

    # The section sits after the memories and before the knowledge, dated, labelled [c1].
    material = recall.rig.fake.last_chat()["messages"][-1]["content"]
    today = time.strftime("%Y-%m-%d")
    assert (material.index("lives near a lake") < material.index("## Earlier conversations")
            < material.index(f'[c1] {today}, "Weekend plans"') < material.index(KAYAK_A)
            < material.index("Kayak safety checklist."))
    system = recall.rig.fake.last_chat()["messages"][0]["content"]
    assert "[c1]" in system and KAYAK_A not in system

    done = events[-1]
    assert isinstance(done, Done)
    assert [(c.n, c.cited) for c in done.turn.conversations] == [(1, True)]
    assert done.turn.timings["conversations_ms"] >= 0
    # Stored by value with the turn; the export and `sessions show --json` list it.
    [stored] = recall.rig.store.turns(done.turn.session_id)
    assert stored.conversations == done.turn.conversations
    session = recall.rig.store.get(done.turn.session_id)
    markdown = session_markdown(session, [stored])
    assert "Earlier conversations:" in markdown and '"Weekend plans", turn 1' in markdown
    [as_json] = turn_json(stored)["conversations"]
    assert as_json["cited"] is True and as_json["session"] == earlier


async def test_the_current_session_is_never_recalled(recall: Recall) -> None:
    engine = recall.make()
    recall.rig.fake.script_chat(KAYAK_A)
    first = await engine.ask(KAYAK_Q)
    assert isinstance(first, Done)
    await engine.drain(timeout=5)
    recall.rig.fake.script_chat("Saturday.")
    events = await collect(engine.send("What did we decide about the kayak?"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved) and retrieved.conversations == ()
    assert "## Earlier conversations" not in recall.rig.fake.last_chat()["messages"][-1][
        "content"]
    # A new session does recall it (the turn was indexed as it was stored).
    engine.new_session()
    recall.rig.fake.script_chat("On Saturday [c1].")
    events = await collect(engine.send("What did we decide about the kayak?"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert [c.item.session_id for c in retrieved.conversations] == [first.turn.session_id]


async def test_unrelated_earlier_turns_stay_out_of_the_prompt(recall: Recall) -> None:
    recall.past_session("How do I resize a partition with parted?",
                        "Use resizepart, then grow the filesystem.", title="Disks")
    recall.rig.fake.script_chat("Paris.")
    events = await collect(recall.make().send("What is the capital of France?"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved) and retrieved.conversations == ()
    assert "Earlier conversations" not in recall.rig.fake.last_chat()["messages"][-1]["content"]


async def test_a_time_phrase_narrows_the_dates_and_is_reported(recall: Recall) -> None:
    noon = datetime.now().replace(hour=12, minute=0, second=0, microsecond=0)
    recall.past_session(KAYAK_Q, "We picked Saturday.", title="Old plan",
                        when=(noon - timedelta(days=40)).timestamp())
    recent = recall.past_session(KAYAK_Q, KAYAK_A, title="New plan",
                                 when=(noon - timedelta(days=1)).timestamp())
    recall.rig.fake.script_chat("Saturday morning [c1].")
    events = await collect(recall.make().send("What did we decide yesterday about the kayak?"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert retrieved.time_range is not None and retrieved.time_range_applied
    assert retrieved.time_range.phrase == "yesterday"
    assert "yesterday" in retrieved.time_range.describe()
    assert [c.item.session_id for c in retrieved.conversations] == [recent]


async def test_two_near_equal_conversations_are_both_recalled_the_decision_first(
        recall: Recall) -> None:
    """An older chat on the topic matches a little better than the plan decided since, which
    alone sits under the floor: both reach the prompt, the newer first (issue 23)."""
    noon = datetime.now().replace(hour=12, minute=0, second=0, microsecond=0)
    older = recall.past_session(
        "Where should we stay on the Kyoto trip in April?",
        "A hotel near the station is cheap; a ryokan is nicer. Let us think about it.",
        title="Kyoto trip", when=(noon - timedelta(days=30)).timestamp())
    decided = recall.past_session("Kyoto: ryokan or hotel?",
                                  "Decided: the ryokan in Gion, booked for April.",
                                  title="Kyoto plan", when=(noon - timedelta(days=3)).timestamp())
    recall.rig.fake.script_chat("The ryokan in Gion [c1].")
    events = await collect(recall.make().send("Where do we stay in Kyoto in April?"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert [c.item.session_id for c in retrieved.conversations] == [decided, older]
    material = recall.rig.fake.last_chat()["messages"][-1]["content"]
    assert material.index("booked for April") < material.index("Let us think about it")


async def test_deleting_the_recalled_session_blanks_the_copy(recall: Recall) -> None:
    earlier = recall.past_session(KAYAK_Q, KAYAK_A)
    recall.rig.fake.script_chat("Saturday [c1].")
    done = await recall.make().ask("What did we decide about the kayak trip?")
    assert isinstance(done, Done) and done.turn.conversations
    recall.rig.store.delete(earlier)
    [stored] = recall.rig.store.turns(done.turn.session_id)
    [c1] = stored.conversations
    assert c1.item.deleted and c1.item.title == CONVERSATION_DELETED
    assert KAYAK_A not in json.dumps(turn_json(stored))
    assert c1.cited  # the answer still says [c1]: the marker explains what it was


async def test_the_search_conversations_tool_adds_numbered_turns(recall: Recall) -> None:
    earlier = recall.past_session("Which rsync flags keep permissions?",
                                  "Use rsync -a --delete src/ dst/.", title="Backups")
    engine = recall.make(tools=True)
    recall.rig.fake.script_chat(tool_calls=[{
        "name": "search_conversations", "arguments": {"query": "rsync flags", "since": "30d"},
    }])
    recall.rig.fake.script_chat("It was rsync -a --delete [c1].")
    events = await collect(engine.send("Remind me of that command for copying my photos"))
    [call] = [e for e in events if isinstance(e, ToolCalled)]
    assert call.tool.ok and call.tool.arguments == {"query": "rsync flags", "since": "30d"}
    assert [(c.n, c.item.session_id) for c in call.conversations] == [(1, earlier)]
    first, second = recall.rig.fake.chat_requests
    assert "search_conversations" in [t["function"]["name"] for t in first["tools"]]
    assert "rsync -a --delete" in second["messages"][-1]["content"]
    done = events[-1]
    assert isinstance(done, Done)
    assert [(c.n, c.cited) for c in done.turn.conversations] == [(1, True)]


async def test_the_tool_reports_a_date_it_cannot_read(recall: Recall) -> None:
    engine = recall.make(tools=True)
    recall.rig.fake.script_chat(tool_calls=[{
        "name": "search_conversations", "arguments": {"query": "rsync", "since": "someday"},
    }])
    recall.rig.fake.script_chat("I could not search that date.")
    events = await collect(engine.send("What did I ask about rsync?"))
    [call] = [e for e in events if isinstance(e, ToolCalled)]
    assert not call.tool.ok and "someday" in call.tool.result
    assert isinstance(events[-1], Done)


async def test_a_failing_recall_is_a_warning_not_a_lost_answer(recall: Recall) -> None:
    def broken(message: str, *, session_id: str | None, top_k: int) -> Recollection:
        raise RuntimeError("collection is gone")

    recall.source.recall = broken  # type: ignore[method-assign]
    recall.rig.fake.script_chat("Fine.")
    events = await collect(recall.make().send("What did we decide about the kayak?"))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert any("collection is gone" in w for w in retrieved.warnings)
    assert isinstance(events[-1], Done)


async def test_recall_is_off_with_memory(recall: Recall) -> None:
    recall.past_session(KAYAK_Q, KAYAK_A)
    recall.rig.fake.script_chat("No idea.")
    events = await collect(recall.make().send("What did we decide about the kayak trip?",
                                              use_memory=False))
    retrieved = events[0]
    assert isinstance(retrieved, Retrieved)
    assert not retrieved.conversations_used and retrieved.conversations == ()


async def test_an_idle_session_is_summarised_and_indexed(recall: Recall) -> None:
    engine = recall.make(summarize_idle_seconds=0.2)
    recall.rig.fake.script_chat(
        json.dumps({"title": "Kayak weekend", "summary": "Decided to kayak on Saturday."}),
        match=_is_recap)
    for question, answer in ((KAYAK_Q, KAYAK_A), ("And the tent?", "Take the small tent.")):
        recall.rig.fake.script_chat(answer, match=lambda b: not _is_recap(b))
        assert isinstance(await engine.ask(question), Done)
    session = engine.session
    assert session is not None
    await wait_until_async(lambda: summary_of(recall.rig.store, session.id) is not None)
    text, through = summary_of(recall.rig.store, session.id) or ("", 0)
    assert text == "Decided to kayak on Saturday." and through == 2
    request = next(b for b in recall.rig.fake.chat_requests if _is_recap(b))
    # A background request with the chat's rules: think off, a schema, the session's num_ctx.
    assert request["think"] is False and request["format"]
    assert request["options"]["num_ctx"] == 8192
    assert "Take the small tent." in request["messages"][1]["content"]
    await engine.drain(timeout=5)
    await wait_until_async(lambda: any(h.seq is None for h in _hits(recall, "kayak weekend")))


async def test_a_one_turn_session_is_not_summarised(recall: Recall) -> None:
    engine = recall.make(summarize_idle_seconds=0.1)
    recall.rig.fake.script_chat("Hello!")
    assert isinstance(await engine.ask("hi"), Done)
    await wait_until_async(lambda: engine.background.idle_timer is None)  # the idle work ran
    await engine.drain(timeout=5)
    assert not any(_is_recap(b) for b in recall.rig.fake.chat_requests)


def _hits(recall: Recall, query: str) -> list:
    from assistant.conversations.search import search_conversations

    recall.index.sync()
    return list(search_conversations(recall.index, query, top_k=5).hits)
