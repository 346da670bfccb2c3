"""`brain ask` and `brain sessions` end to end (in-process) over a real index and memory store
(HashEmbedder instead of the model), answering through the fake Ollama server."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import jsonschema
import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from assistant.retrieval.contract import SEARCH_RESULT_SCHEMA
from assistant.retrieval.hybrid import HybridRetriever
from tests.fake_ollama import FakeOllamaServer, chat_turn
from tests.fake_ollama_runtime import count_tokens
from tests.fakes import HashEmbedder
from tests.fixtures.memory import MemoryVectors
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk
from tests.signals import default_sigint

Run = Callable[..., tuple[int, str, str]]
HIT_SCHEMA = SEARCH_RESULT_SCHEMA["properties"]["hits"]["items"]
MEMORY_KEYS = {"id", "type", "key", "text", "score", "created_at", "updated_at", "status",
               "source", "pinned", "importance", "confidence"}

NOTES = {
    "git/git-stash.md": "# git stash\n\nStash the changes in a dirty working directory away.\n",
    "linux/tar.md": "# tar\n\nArchiving utility: create, list and extract tar archives.\n",
    "tickets/ABC-001.md": "# ABC-001\n\nLogin page crashes when the password is empty.\n",
}


def last_answer_request(fake: FakeOllamaServer) -> dict:
    """The last /api/chat body that asked for an answer (memory extraction, which `ask` runs
    after answering, asks for JSON with `format`; then the cache warm-up, one token)."""
    answers = [body for body in fake.chat_requests if chat_turn(body)]
    assert answers, "the fake Ollama received no answer request"
    return answers[-1]


@pytest.fixture
def kb(tmp_path: Path) -> FakeKnowledgeBase:
    """The knowledge base `brain ask` searches: empty until `indexed` fills it."""
    return FakeKnowledgeBase(HashEmbedder(dimension=64))


@pytest.fixture
def brain(
    ollama_home: Path, kb: FakeKnowledgeBase, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Run]:
    """`brain ARGS…` in-process against the fake Ollama, over the real HybridRetriever on an
    in-memory knowledge base and the real memory store (HashEmbedder, in-memory vectors)."""
    import assistant.retrieval.open as opener

    embedder = kb.embedder
    vectors = MemoryVectors()
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    monkeypatch.setattr("assistant.memory.service.chroma_vectors", lambda ctx: vectors)

    def open_retriever(ctx, *, origin="cli", log=None):
        return HybridRetriever(kb, embedder, ctx.config.retrieval, log=log,
                               origin=origin, parallel=False)

    monkeypatch.setattr(opener, "open_retriever", open_retriever)

    def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        capsys.readouterr()
        code = main(["--home", str(ollama_home), *argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield run


@pytest.fixture
def indexed(kb: FakeKnowledgeBase, tmp_path: Path) -> Path:
    notes = (tmp_path / "notes").resolve()
    for rel, text in NOTES.items():
        heading = text.splitlines()[0].lstrip("# ")
        kb.add(make_chunk(str(notes / rel), text.rstrip("\n"), root=str(notes),
                          heading=heading))
    return notes


def test_ask_json_has_the_search_and_memory_contracts(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    # About the question: a memory unrelated to it stays out of the prompt (issue 23).
    preference = "I prefer short answers on how to stash changes."
    code, _, err = brain("memory", "add", preference, "--type", "preference")
    assert code == 0, err
    fake_ollama.script_chat("Run `git stash` to put changes away [1].")
    code, out, err = brain("ask", "how do I stash the changes in a dirty directory?",
                           "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["answer"] == "Run `git stash` to put changes away [1]."
    assert obj["sources"], obj
    for hit in obj["sources"]:
        jsonschema.validate(hit, HIT_SCHEMA)
    assert obj["sources"][0]["source"] == str(indexed / "git/git-stash.md")
    assert obj["citations"] == [1]
    assert obj["low_confidence"] is False
    [memory] = obj["memories"]
    assert memory["text"] == preference and set(memory) == MEMORY_KEYS
    assert {"retrieval_ms", "recall_ms", "assembly_ms", "overhead_ms", "total_ms"} <= set(
        obj["timings"]
    )
    assert obj["status"] == "complete" and obj["model"] == "qwen3:4b"
    # What the model saw: the memory and the numbered excerpt, labelled, after the question.
    material = last_answer_request(fake_ollama)["messages"][-1]["content"]
    assert f"## Memory about the user\n- (preference) {preference}" in material
    assert '<excerpt n="1" file="git/git-stash.md:1-3" heading="git stash">' in material


def test_ask_streams_the_answer_then_the_cited_sources(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.script_chat("Use tar to extract archives [1].")
    code, out, err = brain("ask", "how to extract a tar archive")
    assert code == 0, err
    answer, sources = out.split("\nSources:\n")
    assert answer.strip() == "Use tar to extract archives [1]."
    assert sources.startswith("[1] linux/tar.md:1-3 — tar\n")
    assert str(indexed / "linux/tar.md") in sources
    assert "(session " in err and "qwen3:4b" in err


def test_question_from_stdin_and_switches(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    code, out, err = brain("ask", "-", "--no-knowledge", "--no-memory",
                           stdin="  what is two plus two?\n")
    assert code == 0, err
    assert "echo: what is two plus two?" in out  # the fake echoes the question
    material = last_answer_request(fake_ollama)["messages"][-1]["content"]
    assert "knowledge search is off" in material and "memory is off" in material


def test_each_ask_is_a_new_session_unless_continued(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    code, out, _ = brain("ask", "first question", "--json", "--no-knowledge")
    first = json.loads(out)["session_id"]
    code, out, _ = brain("ask", "unrelated question", "--json", "--no-knowledge")
    second = json.loads(out)["session_id"]
    assert first != second
    assert len(last_answer_request(fake_ollama)["messages"]) == 2  # no history from the first ask
    code, out, _ = brain("ask", "follow up", "--continue", "--json", "--no-knowledge")
    assert code == 0 and json.loads(out)["session_id"] == second
    _, out, _ = brain("ask", "to the first", "--session", first[:5], "--json",
                         "--no-knowledge")
    assert json.loads(out)["session_id"] == first
    messages = last_answer_request(fake_ollama)["messages"]
    asked = [m["content"].split("\n\n", 1)[0] for m in messages if m["role"] == "user"]
    assert asked == ["first question", "to the first"]


def test_ollama_down_keeps_the_question_and_retry_answers_it(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.stop()
    code, out, err = brain("ask", "is anyone there?", "--no-knowledge")
    assert code == 1
    assert "Ollama is not running" in err and "ollama serve" in err
    assert "Traceback" not in err
    session = err.split("saved in session ")[1].split(";")[0]
    code, out, _ = brain("sessions", "show", session, "--json")
    [turn] = json.loads(out)["turns"]
    assert (turn["question"], turn["status"]) == ("is anyone there?", "failed")

    fake_ollama.start()
    fake_ollama.script_chat("Yes, I am here.")
    code, out, err = brain("ask", "--session", session, "--retry", "--no-knowledge")
    assert code == 0, err
    assert out.startswith("Yes, I am here.")
    code, out, _ = brain("sessions", "show", session, "--json")
    assert [(t["question"], t["status"]) for t in json.loads(out)["turns"]] == [
        ("is anyone there?", "complete")
    ]


def test_json_failure_reports_the_error_and_the_session(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    code, out, _ = brain("ask", "hello", "--model", "missing:7b", "--json")
    assert code == 1
    assert "ollama pull missing:7b" in out or json.loads(out)
    fake_ollama.script_chat("one two three", disconnect_after=2)
    code, out, _ = brain("ask", "count", "--json", "--no-knowledge")
    assert code == 1
    obj = json.loads(out)
    assert obj["error"]["kind"] == "dropped" and obj["error"]["retryable"] is True
    assert obj["answer"] == "one two " and obj["status"] == "failed"
    assert obj["session_id"]


def test_an_answer_cut_off_at_the_length_limit_is_reported(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.script_chat("The answer starts but", done_reason="length")
    code, out, err = brain("ask", "explain tar", "--no-knowledge")
    assert code == 0 and "The answer starts but" in out
    assert "answer cut off at the length limit" in err and "--retry" in err
    fake_ollama.script_chat("Again cut", done_reason="length")
    code, out, _ = brain("ask", "explain tar", "--no-knowledge", "--json")
    obj = json.loads(out)
    assert code == 0 and obj["truncated"] is True and obj["status"] == "complete"
    session = obj["session_id"]
    fake_ollama.script_chat("Whole answer.")
    code, out, err = brain("ask", "explain tar", "--no-knowledge", "--json")
    assert json.loads(out)["truncated"] is False and "cut off" not in err
    # The mark is stored with the turn: `sessions show` still tells.
    code, out, _ = brain("sessions", "show", session, "--json")
    assert [t["truncated"] for t in json.loads(out)["turns"]] == [True]
    code, out, _ = brain("sessions", "show", session)
    assert "assistant: Again cut (cut off at the length limit)" in out


def test_the_footer_says_when_the_model_cited_none_of_its_sources(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.script_chat("Use tar to extract archives.")
    code, out, err = brain("ask", "how to extract a tar archive")
    assert code == 0, err
    assert "\nRetrieved (the model cited none of these sources):\n[1] linux/tar.md" in out
    assert "own knowledge" not in err


def test_an_answer_from_the_models_own_knowledge_is_said_to_be(
    brain: Run, fake_ollama: FakeOllamaServer
) -> None:
    # Nothing indexed: the search finds nothing, and a small model does not say so itself.
    fake_ollama.script_chat("The capital of Australia is Sydney.")
    code, out, err = brain("ask", "what is the capital of Australia", "--json")
    obj = json.loads(out)
    assert obj["low_confidence"] is True
    assert "not found in your files; this answer is the model's own knowledge" in obj["notes"]
    fake_ollama.script_chat("The capital of Australia is Sydney.")
    code, out, err = brain("ask", "what is the capital of Australia")
    assert "note: not found in your files; this answer is the model's own knowledge" in err
    fake_ollama.script_chat("I did not find it in your files; it is Canberra.")
    code, out, err = brain("ask", "what is the capital of Australia")
    assert code == 0 and "own knowledge" not in err


def test_ask_continue_finds_its_history_in_the_servers_prompt_cache(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer, detached_runs: list[list[str]]
) -> None:
    # Each `ask` is followed by extraction and the session summary (in its detached `sessions
    # finish`, run here in-process), whose prompts replace the conversation in the server's
    # one-slot cache: the next `ask -c` would re-read it all.
    answers = ["Run `git stash` to put changes away [1]. " * 12, "Use tar -xf [1]. " * 8]
    for n, question in enumerate(["how do I stash the changes in a dirty directory?",
                                  "and how do I extract a tar archive?"]):
        fake_ollama.script_chat(answers[n], match=chat_turn)
        code, _, err = brain("ask", question, *(["-c"] if n else []))
        assert code == 0, err
        argv = detached_runs[-1]
        code, _, err = brain(*argv[argv.index("sessions"):])
        assert code == 0, err
    assert any(b.get("format") for b in fake_ollama.chat_requests)  # the background work ran
    turns = [g for g in fake_ollama.generations
             if not g.format and g.options.get("num_predict") not in (None, 1)]
    second = turns[-1]
    history = second.prompt_tokens - count_tokens(last_answer_request(fake_ollama)
                                                  ["messages"][-1]["content"])
    # Read: the new message only; the whole history, the first answer included, was cached.
    assert second.cached_tokens >= 0.95 * history, (second, history)
    assert second.cached_tokens / second.prompt_tokens >= 0.6, second
    assert second.evaluated_tokens <= count_tokens(
        last_answer_request(fake_ollama)["messages"][-1]["content"]) + 24


def test_missing_model_is_a_clear_error(brain: Run, indexed: Path) -> None:
    code, out, err = brain("ask", "hello", "--model", "missing:7b")
    assert code == 1 and out == ""
    assert "ollama pull missing:7b" in err and "Traceback" not in err


def test_a_mistyped_model_does_not_stick_to_the_session(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer, ollama_home: Path
) -> None:
    code, out, _ = brain("ask", "hello", "--json", "--no-knowledge")
    session = json.loads(out)["session_id"]
    code, out, err = brain("ask", "again", "-c", "--model", "qwen3:4bb", "--no-knowledge")
    assert code == 1 and "ollama pull qwen3:4bb" in err
    code, out, _ = brain("ask", "and again", "-c", "--json", "--no-knowledge")
    assert code == 0, out
    assert json.loads(out)["model"] == "qwen3:4b" and json.loads(out)["session_id"] == session
    assert {b["model"] for b in fake_ollama.chat_requests} == {"qwen3:4b"}  # typo never sent


def test_chatting_before_indexing_anything(brain: Run, fake_ollama: FakeOllamaServer) -> None:
    fake_ollama.script_chat("I don't have notes on that.")
    code, out, err = brain("ask", "what is in my notes?")
    assert code == 0, err
    assert "nothing is indexed yet" in err and "brain index PATH" in err
    assert out.startswith("I don't have notes on that.")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("ask",), "nothing to ask"),
        (("ask", "   "), "nothing to ask"),
        (("ask", "--retry"), "--retry needs the session"),
        (("ask", "q", "--session", "nope"), "no session matches 'nope'"),
        (("ask", "q", "--continue"), "no session to continue"),
        (("sessions", "show", "nope"), "no session matches 'nope'"),
    ],
)
def test_bad_input_is_a_clear_error(brain: Run, argv: tuple[str, ...], message: str) -> None:
    code, out, err = brain(*argv)
    assert code == 1 and out == ""
    assert message in err and "Traceback" not in err


def test_sessions_list_show_export_rename_rm(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer, tmp_path: Path
) -> None:
    code, out, _ = brain("sessions", "list")
    assert code == 0 and "no sessions yet" in out
    fake_ollama.script_chat("Stash with git stash [1].")
    code, out, _ = brain("ask", "how do I stash changes?", "--json")
    sid = json.loads(out)["session_id"]

    code, out, _ = brain("sessions", "list")
    assert out.startswith(sid) and "1 turn" in out and "how do I stash changes?" in out
    code, out, _ = brain("sessions", "list", "--json")
    [entry] = json.loads(out)["sessions"]
    assert entry["id"] == sid and entry["turns"] == 1

    code, out, _ = brain("sessions", "show", sid)
    assert "you: how do I stash changes?" in out and "[1] git/git-stash.md:1-3" in out

    target = tmp_path / "chat.md"
    code, _, err = brain("sessions", "export", sid[:4], "-o", str(target))
    assert code == 0, err
    markdown = target.read_text(encoding="utf-8")
    assert markdown.startswith("# how do I stash changes?")
    assert "Stash with git stash [1]." in markdown
    assert str(indexed / "git/git-stash.md") in markdown
    code, out, _ = brain("sessions", "export", sid)
    assert out == markdown
    code, _, err = brain("sessions", "export", sid, "-o", str(tmp_path))
    assert code == 1 and "is a folder" in err

    code, out, _ = brain("sessions", "rename", sid, "Git", "stashing")
    assert out.strip() == f"{sid}  Git stashing"
    code, out, err = brain("sessions", "rm", sid, "nope")
    assert code == 1 and "no session matches 'nope'" in err
    code, out, _ = brain("sessions", "list", "--json")
    assert len(json.loads(out)["sessions"]) == 1  # nothing deleted on a bad id
    code, out, _ = brain("sessions", "rm", sid)
    assert code == 0 and "deleted session" in out and "Git stashing" in out
    code, out, _ = brain("sessions", "list", "--json")
    assert json.loads(out)["sessions"] == []


def test_ctrl_c_keeps_the_partial_answer(ollama_home: Path, fake_ollama: FakeOllamaServer) -> None:
    """A real process and a real SIGINT: the answer so far stays on screen and in the session."""
    import os
    import signal
    import subprocess
    import sys
    import time

    fake_ollama.script_chat([f"w{i} " for i in range(400)], chunk_delay=0.05)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "BRAIN_HOME": str(ollama_home), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant.cli.main", "ask", "long answer please",
         "--no-knowledge", "--no-memory"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        seen = b""
        while b"w2 " not in seen:  # stream started
            assert time.monotonic() < deadline, "no tokens streamed"
            seen += os.read(proc.stdout.fileno(), 1024)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    assert (seen + out).decode().startswith("w0 w1 w2 ")  # what was shown stays shown
    assert "interrupted" in err.decode() and "Traceback" not in err.decode()
    from assistant.sessions.store import SessionStore

    store = SessionStore.open(ollama_home / "data" / "sessions.sqlite3")
    [session] = store.list()
    [turn] = store.turns(session.id)
    store.close()
    assert turn.status == "interrupted"
    assert turn.answer.startswith("w0 w1 w2 ")
    assert len(turn.answer.split()) < 400


def test_persona_preset(brain: Run, fake_ollama: FakeOllamaServer) -> None:
    code, _, err = brain("ask", "hi", "--persona", "concise", "--no-knowledge")
    assert code == 0, err
    system = last_answer_request(fake_ollama)["messages"][0]["content"]
    assert system.startswith("You are second-brain. Answer in as few words as possible")
    code, out, err = brain("ask", "hi", "--persona", "pirate")
    assert code == 1 and out == ""
    assert "no persona 'pirate'" in err and "concise" in err


def _is_extraction(body: dict) -> bool:
    return bool(body.get("format"))


def test_ask_extracts_memories_at_the_end_of_its_session(
    brain: Run, fake_ollama: FakeOllamaServer, ollama_home: Path
) -> None:
    # Default settings (extract_every_turns = 6): the process ending is the session's end.
    # The request timeout also bounds the whole extraction (storing and embedding included):
    # the fixture's 5 s, meant for failure tests, was overrun on a loaded machine.
    (ollama_home / "config" / "config.toml").write_text(
        f'[ollama]\nhost = "{fake_ollama.url}"\ntimeout = 60.0\n', encoding="utf-8")
    fake_ollama.script_chat("Lisbon is on Western European Time (UTC+0, UTC+1 in summer).",
                            match=lambda body: not _is_extraction(body))
    fake_ollama.script_chat(format_json={"memories": [{
        "type": "fact", "key": "home_city", "text": "The user lives in Lisbon since last year.",
        "confidence": 0.9, "importance": 0.7}]}, match=_is_extraction)
    code, out, err = brain("ask", "I moved to Lisbon last year, what's the time zone?",
                           "--wait")
    assert code == 0, err
    assert "Western European Time" in out and "memory extraction" not in err
    [extraction] = [b for b in fake_ollama.chat_requests if _is_extraction(b)]
    assert "I moved to Lisbon last year" in json.dumps(extraction)
    assert "Western European Time" not in json.dumps(extraction)  # the user's words only
    code, out, err = brain("memory", "list", "--json")
    assert code == 0, err
    [memory] = json.loads(out)["memories"]
    assert memory["text"] == "The user lives in Lisbon since last year."
    assert memory["key"] == "home_city"


def test_ask_json_is_one_object_printed_after_extraction(
    brain: Run, fake_ollama: FakeOllamaServer
) -> None:
    fake_ollama.script_chat(format_json={"memories": [{
        "type": "preference", "key": "reply_style", "text": "The user likes terse replies.",
        "confidence": 0.9, "importance": 0.5}]}, match=_is_extraction)
    code, out, err = brain("ask", "I like terse replies. What is 2+2?", "--json",
                           "--no-knowledge", "--wait")
    assert code == 0, err
    obj = json.loads(out)  # one object, nothing else on stdout
    assert obj["status"] == "complete"
    _, listed, _ = brain("memory", "list", "--json")
    assert [m["text"] for m in json.loads(listed)["memories"]] == [
        "The user likes terse replies."]


def test_failed_extraction_is_a_note_and_the_answer_stands(
    brain: Run, fake_ollama: FakeOllamaServer
) -> None:
    for _ in range(4):  # every attempt (and its retry) gets a broken reply
        fake_ollama.script_chat(raw_body=b'{"message": {"content": "{not json', fail=500,
                                match=_is_extraction)
    code, out, err = brain("ask", "I moved to Lisbon last year, what's the time zone?",
                           "--wait")
    assert code == 0, err
    assert "echo: I moved to Lisbon" in out
    notes = [line for line in err.splitlines() if "memory extraction failed" in line]
    assert len(notes) == 1 and notes[0].startswith("note: ")
    assert any(_is_extraction(b) for b in fake_ollama.chat_requests)
    _, listed, _ = brain("memory", "list", "--json")
    assert json.loads(listed)["memories"] == []


def test_ask_leaves_extraction_to_a_detached_finish(
    brain: Run, fake_ollama: FakeOllamaServer, detached_runs: list[list[str]], ollama_home: Path
) -> None:
    code, out, err = brain("ask", "I moved to Lisbon last year, what's the time zone?",
                           "--json")
    assert code == 0, err
    session = json.loads(out)["session_id"]
    assert not any(_is_extraction(b) for b in fake_ollama.chat_requests)  # not here
    [argv] = detached_runs
    assert argv[-5:] == ["--home", str(ollama_home), "sessions", "finish", session]
    # What the detached run does, in-process: the extraction this ask skipped.
    fake_ollama.script_chat(format_json={"memories": [{
        "type": "fact", "key": "home_city", "text": "The user lives in Lisbon.",
        "confidence": 0.9, "importance": 0.7}]}, match=_is_extraction)
    code, _out, err = brain(*argv[argv.index("sessions"):])
    assert code == 0, err
    _, listed, _ = brain("memory", "list", "--json")
    assert [m["text"] for m in json.loads(listed)["memories"]] == ["The user lives in Lisbon."]
    brain("ask", "no memory here", "--no-memory")
    assert detached_runs[-1][-1] == "--no-memory"


def test_no_memory_sends_no_extraction_request(brain: Run, fake_ollama: FakeOllamaServer) -> None:
    code, out, err = brain("ask", "I moved to Lisbon last year, what's the time zone?",
                           "--no-memory")
    assert code == 0, err
    assert "echo: I moved to Lisbon" in out
    assert fake_ollama.chat_requests and not any(
        _is_extraction(r.body) for r in fake_ollama.requests
        if r.path == "/api/chat" and isinstance(r.body, dict))
    assert "memory extraction" not in err


def test_ask_warns_when_the_vector_store_lost_its_vectors(
    brain: Run, kb: FakeKnowledgeBase, indexed: Path, fake_ollama: FakeOllamaServer
) -> None:
    kb.vector_coverage = lambda: (0, 3)  # type: ignore[attr-defined]  # the store was deleted
    fake_ollama.script_chat("Use tar [1].", match=lambda body: not _is_extraction(body))
    code, out, err = brain("ask", "how to extract a tar archive")
    assert code == 0, err
    assert "Use tar [1]." in out
    assert ("warning: the vector store holds no vectors for the 3 indexed chunks" in err
            and "brain index --sync" in err)
    kb.vector_coverage = lambda: (3, 3)  # type: ignore[attr-defined]  # repaired
    code, _out, err = brain("ask", "how to extract a tar archive")
    assert code == 0 and "warning:" not in err


def test_ask_recalls_an_earlier_conversation_and_cites_it(
    brain: Run, fake_ollama: FakeOllamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datetime import datetime, timedelta

    from tests.fixtures.conversations import ConversationVectors

    vectors = ConversationVectors()
    monkeypatch.setattr("assistant.conversations.service.conversation_vectors",
                        lambda ctx: vectors)
    yesterday = (datetime.now().replace(hour=12, minute=0, second=0, microsecond=0)
                 - timedelta(days=1)).astimezone().isoformat()
    history = tmp_path / "history.jsonl"
    history.write_text("".join(json.dumps(line) + "\n" for line in (
        {"session": "trip", "role": "user", "text": "Saturday or Sunday for the kayak?",
         "created_at": yesterday, "title": "Kayak trip", "ref": "m1"},
        {"session": "trip", "role": "assistant", "created_at": yesterday, "ref": "m2",
         "text": "The wind is calm on Saturday: we decided to take the kayak on Saturday."},
    )), encoding="utf-8")
    code, _, err = brain("sessions", "import", str(history))
    assert code == 0, err

    fake_ollama.script_chat("You decided on Saturday [c1].", match=lambda b: "format" not in b)
    code, out, err = brain("ask", "--json", "what did we decide yesterday about the kayak?")
    assert code == 0, err
    obj = json.loads(out)
    [hit] = obj["conversations"]
    assert hit["rank"] == 1 and hit["title"] == "Kayak trip" and hit["refs"] == ["m1", "m2"]
    assert hit["question"] == "Saturday or Sunday for the kayak?"
    assert set(hit["scores"]) == {"vector", "keyword", "fused"}
    assert obj["conversation_citations"] == [1]
    assert obj["time_range"]["phrase"] == "yesterday" and obj["time_range"]["applied"] is True
    material = last_answer_request(fake_ollama)["messages"][-1]["content"]
    assert "## Earlier conversations" in material and "[c1]" in material

    # The plain output lists the earlier conversation the answer cites (here the ask just
    # before, which is a past session now), with where to find it.
    fake_ollama.script_chat("Saturday [c1].", match=lambda b: "format" not in b)
    code, out, err = brain("ask", "what did we decide about the kayak trip?")
    assert code == 0, err
    assert f"Earlier conversations:\n[c1] {datetime.now():%Y-%m-%d}  " in out
    assert obj["session_id"][:8] in out


@pytest.mark.parametrize("think", ["auto", "off"])
def test_the_reasoning_of_a_thinking_model_is_never_answer_text(
    brain: Run, indexed: Path, fake_ollama: FakeOllamaServer, ollama_home: Path, think: str,
) -> None:
    # qwen3:4b is thinking-only: "auto" asks think:true and the reasoning comes in
    # message.thinking; "off" asks think:false and it comes untagged in content, ended by
    # </think> (ollama/ollama#12736). Either way stdout, --json, the stored session, its export
    # and the next request carry the answer only.
    config = ollama_home / "config" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + f'think = "{think}"\n',
                      encoding="utf-8")
    reasoning = "The user asks about stashing; MARKER-42 says [2] is tar."
    fake_ollama.script_chat("Stash with git stash [1].", thinking=reasoning)
    code, out, err = brain("ask", "how do I stash changes?")
    assert code == 0, err
    assert out.split("\nSources:\n")[0].strip() == "Stash with git stash [1]."
    assert "MARKER" not in out + err  # not printed unless asked (--show-thinking)
    assert "[2]" not in out  # never cited
    fake_ollama.script_chat("Pop it with git stash pop [1].", thinking=reasoning)
    code, out, err = brain("ask", "-c", "and to get them back?", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["answer"] == "Pop it with git stash pop [1]." and "MARKER" not in out
    sent = last_answer_request(fake_ollama)["messages"]
    assert not any("MARKER" in str(m["content"]) for m in sent)
    code, markdown, _ = brain("sessions", "export", obj["session_id"])
    assert code == 0 and "Stash with git stash" in markdown and "MARKER" not in markdown
    fake_ollama.script_chat("Stash with git stash [1].", thinking=reasoning)
    code, out, err = brain("ask", "how do I stash changes?", "--show-thinking")
    assert code == 0 and "MARKER-42" in err and "MARKER" not in out
