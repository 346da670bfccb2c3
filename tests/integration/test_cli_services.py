"""The CLI's composition root: a `brain sessions` command opens its stores through one
`Services`, each once (the conversation index reads the command's one session store), and closes
them all when it ends."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest

import assistant.cli.common as common
from assistant.services import Services
from tests.fixtures.conversations import ConversationVectors
from tests.integration.test_ask_cli import Run, brain, kb  # noqa: F401


class Recorded(Services):
    made: ClassVar[list[Recorded]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.closed = False
        Recorded.made.append(self)

    def close(self) -> None:
        super().close()
        self.closed = True


def test_sessions_commands_open_each_store_once_and_close_them(
        brain: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    vectors = ConversationVectors()
    monkeypatch.setattr("assistant.conversations.service.conversation_vectors",
                        lambda ctx: vectors)
    monkeypatch.setattr(common, "Services", Recorded)
    Recorded.made = []
    source = tmp_path / "history.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in (
        {"session": "s", "role": "user", "text": "Which rsync flags keep permissions?",
         "created_at": "2026-03-02T10:00:00"},
        {"session": "s", "role": "assistant", "text": "rsync -a keeps them.",
         "created_at": "2026-03-02T10:00:05"})),
        encoding="utf-8")
    for argv in (("sessions", "import", str(source)), ("sessions", "search", "rsync flags"),
                 ("sessions", "reindex")):
        code, _, err = brain(*argv)
        assert code == 0, err
    assert [(s.opened, s.closed) for s in Recorded.made] == [
        (Counter({"sessions": 1, "conversations": 1}), True)] * 3
    code, out, err = brain("sessions", "list")
    assert code == 0 and "rsync" in out.lower(), err
    assert Recorded.made[-1].opened == Counter({"sessions": 1})
    # A removal erases in the command's stores: its trace erasers open none of their own.
    session_id = next(line.split()[0] for line in out.splitlines() if "rsync" in line.lower())
    code, _, err = brain("sessions", "rm", session_id)
    assert code == 0, err
    assert (Recorded.made[-1].opened, Recorded.made[-1].closed) == (
        Counter({"sessions": 1, "conversations": 1}), True)
    code, out, err = brain("sessions", "list")
    assert code == 0 and "rsync" not in out.lower(), err
