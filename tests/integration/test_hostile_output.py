"""Stored text reaches the terminal as plain text through every CLI command (issue 22, finding 6).

Hostile strings (CSI clear screen, OSC 0 title, OSC 52 clipboard, OSC 8 link, DCS, a C1 CSI,
bidi overrides) are stored through a document, an imported chat, a memory, a model answer, a
query and a folder name; every command that prints them must show them, not obey them, on
stdout and stderr, and `--json` must still give back the exact stored text.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from assistant.context import AppContext
from assistant.plain_text import plain
from tests.fake_ollama import FakeOllamaServer
from tests.fixtures.retrieval import FakeKnowledgeBase, make_chunk
from tests.integration.test_ask_cli import Run, brain, kb  # noqa: F401  (fixtures)

HOSTILE = (
    "\x1b[2J\x1b[H"  # CSI: clear the screen, cursor home
    "\x1b]0;pwned-title\x07"  # OSC 0: window title
    "\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write the clipboard
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # OSC 8: a hidden link
    "\x1bP+q544e\x1b\\"  # DCS: a terminal query
    "\x9b31m"  # C1 CSI
    "\u202egnp.exe\u202c \u2066iso\u2069"  # bidi override and isolate
)
OBEYED = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u2066", "\u2069")


def assert_plain(*texts: str) -> None:
    for text in texts:
        for ch in OBEYED:
            assert ch not in text, f"{ch!r} reached the terminal in {text[:200]!r}"


def test_plain_shows_controls_and_keeps_text() -> None:
    shown = plain(HOSTILE + "\n\tok 中文 ✓\r\nend\rx")
    assert_plain(shown)
    assert "␛]0;pwned-title␇" in shown and "\\x9b31m" in shown and "\\u202egnp.exe" in shown
    assert shown.endswith("\n\tok 中文 ✓\nend␍x")  # newline and tab kept, CRLF → LF
    assert plain(shown) == shown


@pytest.fixture
def stored(brain: Run, kb: FakeKnowledgeBase, tmp_path: Path, ollama_home: Path,  # noqa: F811
           fake_ollama: FakeOllamaServer) -> dict[str, str]:
    """Hostile text stored every way the user can store text; returns ids."""
    notes = (tmp_path / "notes").resolve()
    source = str(notes / f"evil{HOSTILE}.md")
    kb.add(make_chunk(source, f"# beacon {HOSTILE}\n\nbeacon lighthouse {HOSTILE}",
                      root=str(notes), heading=f"beacon {HOSTILE}"))
    chat = tmp_path / "chat.jsonl"
    lines = [{"session": "s1", "role": "user", "text": f"lighthouse question {HOSTILE}",
              "created_at": "2024-05-01T10:00:00Z", "title": f"title {HOSTILE}"},
             {"session": "s1", "role": "assistant", "text": f"lighthouse reply {HOSTILE}",
              "created_at": "2024-05-01T10:00:05Z"}]
    chat.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, _, err = brain("sessions", "import", str(chat))
    assert code == 0, err
    code, _, err = brain("memory", "add", f"my lighthouse is painted {HOSTILE}")
    assert code == 0, err
    code, out, _ = brain("memory", "list", "--json")
    memory_id = json.loads(out)["memories"][0]["id"]
    folder = tmp_path / f"folder{HOSTILE[:12]}"
    folder.mkdir()
    from assistant.knowledge_service import open_knowledge

    knowledge = open_knowledge(AppContext.load(str(ollama_home)), with_embedder=False)
    try:
        knowledge.add_folder(folder)
    finally:
        knowledge.close()
    code, out, _ = brain("sessions", "list", "--json")
    session_id = json.loads(out)["sessions"][0]["id"]
    return {"memory": memory_id, "session": session_id}


def test_every_command_prints_stored_text_plain(
    brain: Run, stored: dict[str, str], fake_ollama: FakeOllamaServer, tmp_path: Path,  # noqa: F811
) -> None:
    fake_ollama.script_chat(f"The beacon is lit [1]. {HOSTILE}")
    commands = [
        ("search", "beacon", "lighthouse"),
        ("search", f"beacon {HOSTILE}"),  # the query itself, echoed and logged
        ("ask", "where is the beacon lighthouse?"),
        ("log",),
        ("sessions", "list"),
        ("sessions", "show", stored["session"]),
        ("sessions", "search", "lighthouse"),
        ("sessions", "export", stored["session"]),
        ("memory", "list"),
        ("memory", "search", "lighthouse"),
        ("memory", "history", stored["memory"]),
        ("memory", "export"),
        ("folders",),
    ]
    shown = ""
    for argv in commands:
        code, out, err = brain(*argv)
        assert code == 0, (argv, err)
        assert_plain(out, err)
        shown += out + err
    # Shown, not dropped: the visible form of each sequence is on screen.
    assert "␛]0;pwned-title␇" in shown and "␛]52;c;cHduZWQ=␇" in shown
    assert "\\u202egnp.exe" in shown
    target = tmp_path / "export.md"
    code, _, err = brain("sessions", "export", stored["session"], "-o", str(target))
    assert code == 0, err
    assert_plain(target.read_text(encoding="utf-8"))  # a Markdown file is read in terminals


def test_json_stays_exact(brain: Run, stored: dict[str, str]) -> None:  # noqa: F811
    for argv, pick in [
        (("search", "beacon", "lighthouse", "--json"), lambda o: o["hits"][0]["text"]),
        (("memory", "list", "--json"), lambda o: o["memories"][0]["text"]),
        (("sessions", "list", "--json"), lambda o: o["sessions"][0]["title"]),
    ]:
        code, out, err = brain(*argv)
        assert code == 0, err
        assert_plain(out)
        assert HOSTILE in pick(json.loads(out))
    code, out, _ = brain("memory", "export")
    assert_plain(out)
    assert HOSTILE in json.loads(out.splitlines()[0])["text"]


def test_any_command_handler_writes_through_the_sanitiser(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sanitiser sits on the streams around every handler (eval, doctor and commands added
    later included), and on argparse's own echo of what was typed."""
    import sys

    import assistant.cli.main as cli_main

    real_build = cli_main.build_parser

    def build() -> Any:
        parser = real_build()
        subparsers = parser._subparsers
        assert subparsers is not None  # `brain` has commands
        for action in subparsers._group_actions:
            assert isinstance(action, argparse._SubParsersAction)
            for command in action.choices.values():
                command.set_defaults(func=lambda args: print(HOSTILE) or
                                     print(HOSTILE, file=sys.stderr) or 0)
        return parser

    monkeypatch.setattr(cli_main, "build_parser", build)
    for argv in (["eval", "cases.jsonl"], ["doctor"], ["folders"], ["log"]):
        assert cli_main.main(argv) == 0
        captured = capsys.readouterr()
        assert_plain(captured.out, captured.err)
        assert "␛]0;pwned-title␇" in captured.out and "␛]0;pwned-title␇" in captured.err
    with pytest.raises(SystemExit):
        cli_main.main(["search", "--top-k", HOSTILE])
    assert_plain(capsys.readouterr().err)
