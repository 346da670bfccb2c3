"""`brain sessions import`: turn grouping, refs, bad lines, resume and refusal, ChatGPT exports."""

from __future__ import annotations

import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from assistant.conversations.importing import (
    AlreadyImported,
    ImportConflict,
    begin_run,
    chatgpt_lines,
    import_conversations,
    parse_jsonl,
    read_source,
)
from assistant.conversations.importing import _store_batch as _store_batch
from assistant.conversations.index import ConversationIndex
from assistant.errors import UserError
from tests.fixtures.conversations import ConversationVectors

EXPORT = Path(__file__).parent.parent / "data" / "chatgpt_conversations.json"


def line(session: str, role: str, text: str, when: str = "2024-05-08T13:56:00Z",
         **extra: Any) -> str:
    return json.dumps({"session": session, "role": role, "text": text, "created_at": when}
                      | extra)


def test_consecutive_lines_form_turns() -> None:
    parsed = parse_jsonl([
        line("s1", "assistant", "Hi, I am B.", ref="D1:1"),  # no question before it
        line("s1", "user", "First question", ref="D1:2"),  # unanswered: the next user line
        line("s1", "user", "Second question", ref="D1:3"),
        line("s1", "assistant", "Answer part one", ref="D1:4"),
        line("s1", "assistant", "Answer part two", ref="D1:5"),  # appended to the answer
        line("s2", "assistant", "Another session starts with B", ref="D2:1"),
    ])
    assert not parsed.errors
    s1, s2 = parsed.sessions
    assert [(t.question, t.answer) for t in s1.turns] == [
        ("", "Hi, I am B."), ("First question", ""),
        ("Second question", "Answer part one\nAnswer part two")]
    assert s1.turns[2].refs == [("user", "D1:3"), ("assistant", "D1:4"), ("assistant", "D1:5")]
    assert [(t.question, t.answer) for t in s2.turns] == [("", "Another session starts with B")]
    assert s1.title == "First question" or s1.title == "Hi, I am B."


def test_an_interleaved_session_continues_its_turns() -> None:
    parsed = parse_jsonl([line("a", "user", "q1"), line("b", "user", "q2"),
                          line("a", "assistant", "answer of a")])
    a, b = parsed.sessions
    assert [(t.question, t.answer) for t in a.turns] == [("q1", ""), ("", "answer of a")]
    assert [(t.question, t.answer) for t in b.turns] == [("q2", "")]


@pytest.mark.parametrize(("raw", "message"), [
    ("not json", "not valid JSON"),
    ('["a"]', "expected a JSON object"),
    ('{"session": "s", "role": "bot", "text": "x", "created_at": "2024-01-01"}', '"role"'),
    ('{"session": "s", "role": "user", "text": " ", "created_at": "2024-01-01"}', '"text"'),
    ('{"session": "s", "role": "user", "text": "x"}', '"created_at" is missing'),
    ('{"session": "s", "role": "user", "text": "x", "created_at": "soon"}', "ISO"),
    ('{"session": "", "role": "user", "text": "x", "created_at": 1}', '"session"'),
    ('{"session": "s", "role": "user", "text": "x", "created_at": 1, "who": 1}', "unknown"),
])
def test_bad_lines_are_reported_and_good_ones_kept(raw: str, message: str) -> None:
    parsed = parse_jsonl([line("s", "user", "good"), raw])
    assert len(parsed.sessions) == 1
    assert len(parsed.errors) == 1 and parsed.errors[0].line == 2
    assert message in parsed.errors[0].message


def test_import_stores_turns_dates_and_refs(conversation_index: ConversationIndex) -> None:
    report, errors = import_conversations(conversation_index, [
        line("s1", "user", "Where is Caroline going?", "2023-05-08T13:56:00Z", ref="D1:1",
             title="Chat with Caroline"),
        line("s1", "assistant", "To the support group.", "2023-05-08T13:56:00Z", ref="D1:2"),
        "{bad",
    ], name="file.jsonl")
    assert (report.sessions, report.turns, [e.line for e in errors]) == (1, 1, [3])
    session = conversation_index.store.list()[0]
    assert session.title == "Chat with Caroline"
    turn = conversation_index.store.turns(session.id)[0]
    assert turn.created_at == 1683554160.0 and turn.status == "complete"
    refs = conversation_index.store.conn.execute(
        "SELECT role, ref FROM turn_refs ORDER BY position").fetchall()
    assert [tuple(r) for r in refs] == [("user", "D1:1"), ("assistant", "D1:2")]
    assert conversation_index.count() == 1


def _many(n: int = 30) -> list[str]:
    out = []
    for s in range(n):
        out.append(line(f"s{s}", "user", f"question number {s} about plants", ref=f"q{s}"))
        out.append(line(f"s{s}", "assistant", f"answer number {s}", ref=f"a{s}"))
    return out


def _state(index: ConversationIndex, vectors: ConversationVectors) -> dict[str, Any]:
    conn = index.store.conn
    turns = sorted(tuple(r) for r in conn.execute(
        "SELECT question, answer, created_at FROM turns"))
    units = {r[0] for r in conn.execute("SELECT id FROM conversation_units")}
    return {"turns": turns, "units": len(units), "vectors_match": units == set(vectors.data),
            "runs": [tuple(r) for r in conn.execute(
                "SELECT total, committed, added, finished_at IS NOT NULL FROM session_imports")]}


class Killed(BaseException):
    pass


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_killed_import_resumes_and_ends_like_one_clean_run(
        conversation_index: ConversationIndex, conversation_vectors: ConversationVectors,
        monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
    calls = 0
    real_write = conversation_index.write

    def write(docs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == fail_at:
            raise Killed  # after the batch's transaction, before its index write
        real_write(docs)

    monkeypatch.setattr(conversation_index, "write", write)
    with pytest.raises(Killed):
        import_conversations(conversation_index, _many(), batch_size=8)
    monkeypatch.undo()
    resumed: list[int] = []
    report, _ = import_conversations(conversation_index, _many(), batch_size=8,
                                     on_resume=lambda run: resumed.append(run.committed))
    assert resumed == [8 * fail_at]
    assert report.already_stored == 8 * fail_at and report.turns == 30 - 8 * fail_at
    state = _state(conversation_index, conversation_vectors)
    assert len(state["turns"]) == 30 and state["units"] == 30 and state["vectors_match"]
    assert state["runs"] == [(30, 30, 30, 1)]


def test_a_finished_import_is_refused_unless_again(
        conversation_index: ConversationIndex) -> None:
    import_conversations(conversation_index, _many(3), name="a.jsonl")
    [(finished,)] = conversation_index.store.conn.execute(
        "SELECT finished_at FROM session_imports").fetchall()
    with pytest.raises(AlreadyImported) as refused:
        import_conversations(conversation_index, _many(3), name="b.jsonl")
    # The memory import's words and time form: UTC, the same on every machine.
    when = datetime.fromtimestamp(finished, UTC).strftime("%Y-%m-%d %H:%M")
    assert str(refused.value) == (
        f"b.jsonl was already imported as a.jsonl on {when} UTC (3 turns); "
        "pass --again to import it once more")
    report, _ = import_conversations(conversation_index, _many(3), name="a.jsonl", again=True)
    assert report.turns == 3
    assert len(conversation_index.store.list()) == 6  # a second copy, in new sessions


def test_a_second_process_on_the_same_run_stores_nothing_twice(
        conversation_index: ConversationIndex) -> None:
    store = conversation_index.store
    theirs = begin_run(store, "d" * 64, name="a.jsonl", total=3, again=False)
    mine = begin_run(store, "d" * 64, name="a.jsonl", total=3, again=False)
    assert mine.id == theirs.id
    parsed = parse_jsonl(_many(3))
    _store_batch(store, mine, parsed.sessions, 0)
    with pytest.raises(ImportConflict, match=r"^another import of a\.jsonl changed") as stale:
        _store_batch(store, theirs, parsed.sessions, 0)
    assert stale.value.hint == (
        "wait for the other `brain sessions import` to finish, then run this one again")
    assert len(store.list()) == 3  # the stale batch's sessions were not stored


def test_chatgpt_export_follows_the_current_branch() -> None:
    lines = [json.loads(x) for x in chatgpt_lines(json.loads(EXPORT.read_text("utf-8")))]
    texts = [(x["session"][:8], x["role"], x["text"][:31], x.get("ref")) for x in lines]
    assert texts == [
        ("6650a1b2", "user", "How do I back up my home folder", "u-1"),
        ("6650a1b2", "assistant", "Use `rsync -aAX --delete ~/ /mn", "a-1-new"),  # not a-1-old
        ("6650a1b2", "user", "How big is my home folder? Here", "u-2"),
        # no code, no tool run
        ("6650a1b2", "assistant", "Plan for about 45 GB on the bac", "a-2"),
        # the image part is dropped, the words kept
        ("7761b2c3", "user", "我们六月去太浩湖划皮划艇，需要带什么？", "u-10"),
        ("7761b2c3", "assistant", "带上救生衣、防水袋、防晒霜和足够的水。", "a-10"),  # no thoughts
        ("7761b2c3", "user", "好的，我们决定租两条皮划艇。", "u-11"),  # empty reply dropped
    ]
    assert lines[0]["title"] == "Rsync backup flags" and lines[0]["created_at"] == 1710061201.1


def test_read_source_detects_exports_and_zips(tmp_path: Path) -> None:
    lines, kind = read_source(EXPORT)
    assert kind == "chatgpt" and len(lines) == 7
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(EXPORT, "conversations.json")
        z.writestr("chat.html", "<html></html>")
    assert read_source(archive) == (lines, "chatgpt")
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text(line("s", "user", "hi") + "\n", encoding="utf-8")
    assert read_source(jsonl)[1] == "jsonl"
    with pytest.raises(UserError, match="no such file"):
        read_source(tmp_path / "missing.jsonl")
    bad = tmp_path / "list.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(UserError, match="not a ChatGPT export"):
        read_source(bad)
    with pytest.raises(UserError, match="folder"):
        read_source(tmp_path)


def test_chatgpt_import_is_searchable(conversation_index: ConversationIndex) -> None:
    from assistant.conversations.search import search_conversations

    lines, _ = read_source(EXPORT)
    report, errors = import_conversations(conversation_index, lines, name="conversations.json")
    assert not errors and (report.sessions, report.turns) == (2, 4)
    hits = search_conversations(conversation_index, "决定租皮划艇", top_k=2).hits
    assert {h.title for h in hits} == {"皮划艇旅行计划"}
    assert ("u-11",) in [h.refs for h in hits]


def test_an_odd_conversation_is_skipped_with_its_reason_and_the_rest_imported(
        tmp_path: Path) -> None:
    good = json.loads(EXPORT.read_text("utf-8"))
    odd_time = dict(good[1], create_time="yesterday")
    for node in odd_time["mapping"].values():
        if isinstance(node.get("message"), dict):
            node["message"]["create_time"] = None  # falls back to the conversation's: a string
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([good[0], "not an object", {"title": "no mapping"}, odd_time]),
                      encoding="utf-8")
    skipped: list[str] = []
    lines, kind = read_source(export, skipped=skipped)
    assert kind == "chatgpt"
    assert [json.loads(x)["session"][:8] for x in lines] == ["6650a1b2"] * 4
    assert skipped == [
        "conversation 2 of the export is not a JSON object; skipped",
        "conversation 3 of the export has no message mapping; skipped",
        "conversation 4 of the export cannot be read (ValueError: could not convert string to "
        "float: 'yesterday'); skipped",
    ]


@pytest.mark.parametrize("when", [-99_999_999_999, "0800-01-01",  # ~ year -1199; year 800
                                  1_710_061_201_100, "2999-01-01T00:00:00Z"])
def test_an_implausible_time_refuses_its_line_and_keeps_the_rest(when: object) -> None:
    raw = [json.dumps({"session": "s", "role": "user", "text": "odd", "created_at": when}),
           line("s", "user", "fine")]
    parsed = parse_jsonl(raw)
    assert [t.question for s in parsed.sessions for t in s.turns] == ["fine"]
    [error] = parsed.errors
    assert error.line == 1 and '"created_at" is not a plausible time' in error.message


@pytest.mark.parametrize("when", ["0800-01-01", "2999-01-01T00:00:00Z"])
def test_a_memory_import_line_with_an_implausible_time_is_refused(when: str) -> None:
    from assistant.memory.transfer import parse_line as memory_line

    with pytest.raises(ValueError, match="not a plausible time"):
        memory_line(json.dumps({"text": "Likes tea", "created_at": when}))
    memory_line(json.dumps({"text": "Likes tea", "created_at": "2024-05-01"}))


def test_a_rerun_of_an_import_killed_in_its_last_step_finishes_it_and_says_so(
        conversation_index: ConversationIndex, conversation_vectors: ConversationVectors,
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = conversation_index.write
    calls = 0

    def write(docs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 4:  # the last batch (30 turns in 8+8+8+6) is committed, not indexed
            raise Killed
        real_write(docs)

    monkeypatch.setattr(conversation_index, "write", write)
    with pytest.raises(Killed):
        import_conversations(conversation_index, _many(), batch_size=8)
    monkeypatch.undo()
    report, errors = import_conversations(conversation_index, _many(), batch_size=8)
    assert errors == [] and report.turns == 0
    assert report.already_stored == 30 and report.repaired == 6
    state = _state(conversation_index, conversation_vectors)
    assert len(state["turns"]) == 30 and state["units"] == 30 and state["vectors_match"]
    with pytest.raises(AlreadyImported):  # now it is a repeat: --again is needed
        import_conversations(conversation_index, _many(), batch_size=8)
