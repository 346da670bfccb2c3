"""`brain events list|search|show|rm|forget-all` in-process, and run summaries."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from assistant.events.model import EventType, NewEvent
from assistant.events.store import EventStore
from assistant.events.summaries import summarize_due


@pytest.fixture
def logged(home: Path) -> dict[str, str]:
    ctx = AppContext.load(str(home))
    store = EventStore.open(ctx.paths.events_db)
    goal = store.log(NewEvent(EventType.GOAL, "make the login page accessible", importance=0.9,
                              agent="claude-code", session="a11y"))
    step = store.log(NewEvent(EventType.ACTION, "added aria labels \x1b[31mred\x1b[0m",
                              session="a11y", parent=goal.id))
    store.close()
    return {"goal": goal.id, "step": step.id}


def test_list_show_search(logged: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["events", "list", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["events"]
    assert [e["id"] for e in shown] == [logged["step"], logged["goal"]]
    assert main(["events", "list", "--type", "goal"]) == 0
    out = capsys.readouterr().out
    assert logged["goal"] in out and logged["step"] not in out
    assert main(["events", "show", logged["step"][:8]]) == 0
    out = capsys.readouterr().out
    assert f"parent: {logged['goal']}" in out
    assert "\x1b" not in out and "\u241b[31mred" in out  # stored text is never a terminal escape
    assert main(["events", "search", "aria labels", "--json", "--since", "1d"]) == 0
    found = json.loads(capsys.readouterr().out)["events"]
    assert found[0]["id"] == logged["step"]


def test_bad_input_is_one_line(logged: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["events", "list", "--type", "thought"]) == 1
    assert "unknown event type 'thought'" in capsys.readouterr().err
    assert main(["events", "list", "--since", "someday"]) == 1
    assert main(["events", "rm", "evnothing"]) == 1
    assert "no event with id" in capsys.readouterr().err
    assert main(["events", "forget-all"]) == 1
    assert "--yes" in capsys.readouterr().err


def test_rm_and_forget_all(logged: dict[str, str], home: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["events", "rm", logged["step"]]) == 0
    assert "erased 1 events" in capsys.readouterr().out
    # A re-run (of a removal killed after it erased, finished by a later command) is accepted,
    # also by a short id; an id never erased still is not.
    assert main(["events", "rm", logged["step"][:10]]) == 0
    assert "erased earlier" in capsys.readouterr().out
    assert main(["events", "rm", logged["step"], "evnothing"]) == 1
    assert "no event with id 'evnothing'" in capsys.readouterr().err
    assert main(["events", "forget-all", "--yes"]) == 0
    assert "forgot 1 events" in capsys.readouterr().out
    for path in (home / "data").glob("events.sqlite3*"):
        assert b"accessible" not in path.read_bytes()


def test_runs_are_summarised_once_due(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "e.sqlite3")
    now = time.time()
    ids = [store.log(NewEvent(EventType.ACTION, f"step {n} on the cache bug", session="cache",
                              importance=0.4, ts=now - 600 + n)).id for n in range(3)]
    store.log(NewEvent(EventType.NOTE, "fresh session", session="other", ts=now))
    asked: list[str] = []

    def chat(messages: list[dict[str, str]], schema: dict[str, object]) -> str:
        asked.append(messages[-1]["content"])
        return '{"title": "Cache bug", "summary": "Three steps were tried on the cache bug."}'

    written = summarize_due(store, chat, every=0, idle_seconds=300, now=now)
    assert len(written) == 1 and written[0].type is EventType.SUMMARY
    assert written[0].summary_of == tuple(sorted(ids)) and written[0].importance >= 0.7
    assert "step 2 on the cache bug" in asked[0] and "fresh session" not in asked[0]
    # Covered events are not summarised again; a model failure leaves the run due.
    assert summarize_due(store, chat, every=0, idle_seconds=300, now=now) == []

    def down(messages: list[dict[str, str]], schema: dict[str, object]) -> str:
        raise ConnectionError("ollama is not running")

    more = [store.log(NewEvent(EventType.ACTION, f"retry {n}", session="cache")).id
            for n in range(2)]
    assert summarize_due(store, down, every=2, idle_seconds=0) == []
    assert summarize_due(store, chat, every=2, idle_seconds=0)[0].summary_of == \
        tuple(sorted(more))
    store.close()


def test_a_recorded_event_removal_is_finished_by_the_next_command(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from assistant.erasure import intents

    ctx = AppContext.load(str(home))
    store = EventStore.open(ctx.paths.events_db)
    gone = store.log(NewEvent(EventType.NOTE, "the quokka plan", session="s"))
    kept = store.log(NewEvent(EventType.NOTE, "keep this one", session="s"))
    summary = store.log(NewEvent(EventType.SUMMARY, "quokka and more", covers=(gone.id,)))
    store.close()
    # `brain events rm` killed right after recording its intent: nothing erased yet.
    intent = intents.Intent("events", "1 agent events", {"ids": [gone.id, summary.id]})
    with intents.recorded(ctx.paths.data_dir, intent):
        pass
    assert main(["events", "list", "--json"]) == 0  # any command finishes it first
    shown = json.loads(capsys.readouterr().out)["events"]
    assert [e["id"] for e in shown] == [kept.id]
    for path in (home / "data").glob("events.sqlite3*"):
        assert b"quokka" not in path.read_bytes()
    assert main(["events", "rm", kept.id]) == 0
    assert main(["events", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["events"] == []
