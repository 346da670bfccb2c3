"""Honest recall (issue 23 finding 4): conversation search shows only what matches, says what it
searched, and the chat's memories section carries only memories about the question — `brain`
in-process over the real conversation index and memory store (HashEmbedder, a bag of words:
the texts share words where they are about the same thing), answering through the fake Ollama."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.fake_ollama import FakeOllamaServer
from tests.fixtures.conversations import ConversationVectors
from tests.integration.test_ask_cli import Run, brain, kb, last_answer_request  # noqa: F401

RSYNC = ("Which rsync flags keep permissions?", "rsync -a keeps permissions and times.")
KYOTO = ("Shall we stay in a ryokan in Kyoto?", "Yes: a ryokan in Kyoto, near Gion, for "
         "three nights.")


def _at(when: datetime) -> str:
    return when.replace(hour=12, minute=0, second=0, microsecond=0).astimezone().isoformat()


def last_weeks_thursday() -> datetime:
    today = datetime.now()
    return today - timedelta(days=today.weekday() + 4)


@pytest.fixture
def history(brain: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:  # noqa: F811
    """Two earlier chats: rsync flags last week, a Kyoto plan two months ago."""
    vectors = ConversationVectors()
    monkeypatch.setattr("assistant.conversations.service.conversation_vectors",
                        lambda ctx: vectors)
    lines = []
    for session, (question, answer), when in (
            ("backup", RSYNC, last_weeks_thursday()),
            ("kyoto", KYOTO, datetime.now() - timedelta(days=60))):
        lines += [{"session": session, "role": "user", "text": question, "created_at": _at(when),
                   "title": session.capitalize()},
                  {"session": session, "role": "assistant", "text": answer,
                   "created_at": _at(when)}]
    source = tmp_path / "history.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, _, err = brain("sessions", "import", str(source))
    assert code == 0, err
    return brain


def test_a_week_with_an_unrelated_chat_answers_nothing_then_and_the_closest(
        history: Run) -> None:
    code, out, err = history("sessions", "search", "--json", "kyoto last week")
    assert code == 0, err
    found = json.loads(out)
    # Last week holds one chat, about rsync: no word in common, a cosine near 0. Not an answer.
    assert found["time_range"]["applied"] is True and found["hits"] == []
    assert found["closest_outside"]["title"] == "Kyoto"
    assert found["caption"].startswith("nothing about 'kyoto' in that period · dates: ")
    assert "the closest match is from" in found["caption"]

    code, out, err = history("sessions", "search", "kyoto last week")
    assert code == 0, err
    assert "rsync" not in out and "Kyoto" in out
    assert "nothing about 'kyoto' in that period" in err


def test_the_relevance_shown_is_the_cosine_not_the_fused_rank(history: Run) -> None:
    code, out, err = history("sessions", "search", "--json", "rsync flags")
    assert code == 0, err
    [hit] = json.loads(out)["hits"]
    assert hit["title"] == "Backup"
    # Rank 1 of both lists was shown as 100% whatever it matched: the score is its cosine.
    assert hit["score"] == pytest.approx(hit["scores"]["vector"], abs=1e-4) and hit["score"] < 0.9


def test_no_dates_named_says_nothing_about_dates(history: Run) -> None:
    code, out, err = history("sessions", "search", "--json", "ryokan in Kyoto")
    assert code == 0, err
    found = json.loads(out)
    assert found["time_range"] is None
    assert [h["title"] for h in found["hits"]] == ["Kyoto"]
    assert found["caption"] == "1 conversation about 'ryokan in Kyoto'"


def test_unrelated_memories_stay_out_of_the_prompt(
    history: Run, fake_ollama: FakeOllamaServer,
) -> None:
    for text in ("My wife's birthday is March 3.", "Kayak stored in lake house garage.",
                 "I back up my laptop with rsync every Friday."):
        code, _, err = history("memory", "add", text)
        assert code == 0, err
    code, out, _ = history("memory", "list", "--json")
    [birthday] = [m["id"] for m in json.loads(out)["memories"] if "birthday" in m["text"]]
    assert history("memory", "pin", birthday)[0] == 0
    fake_ollama.script_chat("- one\n- two\n- three")
    code, out, err = history("ask", "--json", "Summarize this text in three bullets: "
                             "the meeting moved to noon and lunch is provided.")
    assert code == 0, err
    # The pinned memory always; neither the kayak nor the backups: they are not asked about.
    assert [m["text"] for m in json.loads(out)["memories"]] == ["My wife's birthday is March 3."]
    material = last_answer_request(fake_ollama)["messages"][-1]["content"]
    assert "kayak" not in material and "rsync" not in material

    fake_ollama.script_chat("Every Friday.")
    code, out, err = history("ask", "--json", "When do I back up my laptop with rsync?")
    assert code == 0, err
    texts = [m["text"] for m in json.loads(out)["memories"]]
    assert "I back up my laptop with rsync every Friday." in texts
    assert "Kayak stored in lake house garage." not in texts


def test_without_vectors_the_keywords_decide_alone() -> None:
    """A read-only home searches by keywords only (no cosine): the best keyword hit is shown."""
    from assistant.conversations.finding import FLOOR
    from assistant.conversations.search import ConversationHit

    def hit(keyword: float | None, vector: float | None) -> ConversationHit:
        return ConversationHit(1, "t:1", "s1", "Trip", 1, 0.0, "passport?", "In the drawer.",
                               score=keyword, vector=vector, keyword=keyword, fused=0.1)

    assert FLOOR.admits(hit(1.0, None)) and not FLOOR.admits(hit(0.2, None))
    assert not FLOOR.admits(hit(None, 0.04))  # the 4% cosine, no word in common
