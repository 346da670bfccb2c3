"""One composition root for the CLI: each `brain memory …`, `brain log …` and `brain index
--rebuild` runs on one `Services`, which opens each store once, and nothing else opens one.

In-process `brain` with the HashEmbedder and in-memory memory vectors; every MemoryStore and
RetrievalLog made in the process is counted, so a command that opened its own beside the
Services' shows up as a count above `services.opened`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.cli.main import main
from assistant.context import AppContext
from assistant.memory.store import MemoryStore
from assistant.retrieval.log import RetrievalLog
from assistant.services import Services
from tests.fixtures.knowledge import make_embedder, note_text
from tests.fixtures.memory import MemoryVectors

Run = Callable[..., Services]


@pytest.fixture
def brain(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    """`brain ARGV…` in-process; returns the one Services it ran on, after checking that it
    opened each store once, that no store was opened beside it, and that all were closed."""
    embedder = make_embedder(tmp_path / "embed-cache")
    vectors = MemoryVectors()
    monkeypatch.setattr(AppContext, "embedder", lambda self: embedder)
    monkeypatch.setattr("assistant.memory.service.chroma_vectors", lambda ctx: vectors)
    made: list[Services] = []
    opens: Counter[str] = Counter()
    closes: Counter[str] = Counter()
    real_services = Services.__init__

    def services(self: Services, *args: Any, **kwargs: Any) -> None:
        real_services(self, *args, **kwargs)
        made.append(self)

    def counted(cls: type[MemoryStore] | type[RetrievalLog], name: str) -> None:
        real_init, real_close = cls.__init__, cls.close

        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            real_init(self, *args, **kwargs)
            opens[name] += 1

        def close(self: Any) -> None:
            closes[name] += 1
            real_close(self)

        monkeypatch.setattr(cls, "__init__", init)
        monkeypatch.setattr(cls, "close", close)

    monkeypatch.setattr(Services, "__init__", services)
    counted(MemoryStore, "memory")
    counted(RetrievalLog, "retrieval_log")

    def run(*argv: str, code: int = 0) -> Services:
        made.clear()
        opens.clear()
        closes.clear()
        assert main(["--home", str(home), *argv]) == code, capsys.readouterr()
        assert len(made) == 1, f"{argv}: {len(made)} Services"
        core = made[0]
        assert set(core.opened.values()) <= {1}, f"{argv}: {core.opened}"
        for name in ("memory", "retrieval_log"):
            assert opens[name] == core.opened[name], \
                f"{argv}: {opens[name]} {name} opened, {core.opened[name]} by Services"
        assert closes == opens, f"{argv}: opened {opens}, closed {closes}"
        return core

    yield run


def test_each_memory_command_opens_the_memory_store_once_through_services(
        brain: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    core = brain("memory", "add", "I water the tomatoes every evening")
    assert core.opened == Counter({"memory": 1, "memory_service": 1})
    # The CLI's writes only queue their vectors: no model load for `brain memory add`.
    assert core.memory().eager_vectors is False
    memory_id = capsys.readouterr().out.split()[0]
    brain("memory", "add", "My bike is blue")
    for argv in (["list"], ["list", "--json"], ["search", "tomatoes"], ["history", memory_id],
                 ["pin", memory_id], ["edit", memory_id, "I water the tomatoes at dusk"],
                 ["export", str(tmp_path / "out.jsonl")], ["reindex"], ["profile"]):
        assert brain("memory", *argv).opened["memory"] == 1
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"text": "I live in Lisbon"}) + "\n", encoding="utf-8")
    assert brain("memory", "import", str(lines)).opened["memory"] == 1
    capsys.readouterr()
    assert brain("memory", "rm", memory_id).opened["memory"] == 1
    assert brain("memory", "undo", memory_id).opened["memory"] == 1
    assert brain("memory", "rm", memory_id, "--forever").opened["memory"] == 1
    assert brain("memory", "forget-all", "--yes").opened["memory"] == 1
    assert "forgot" in capsys.readouterr().out


def test_each_log_command_opens_the_retrieval_log_once_through_services(
        brain: Run, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tar.md").write_text(note_text("tar", 2), encoding="utf-8")
    brain("index", str(notes))
    brain("search", "tar")
    capsys.readouterr()
    core = brain("log", "--json")
    assert core.opened == Counter({"retrieval_log": 1})
    entry = json.loads(capsys.readouterr().out.splitlines()[0])
    brain("log")
    assert brain("log", "rate", str(entry["id"]), "--down",
                 "--correct", str(notes / "tar.md")).opened == Counter({"retrieval_log": 1})
    capsys.readouterr()
    export = tmp_path / "cases.jsonl"
    assert brain("log", "--disliked", "--export", str(export)).opened == \
        Counter({"retrieval_log": 1})
    assert "wrote 1 eval case" in capsys.readouterr().out
    case = json.loads(export.read_text(encoding="utf-8"))
    assert case["query"] == "tar" and case["expected"] == [str((notes / "tar.md").resolve())]
    # A missing entry is the user's mistake, and still closes what it opened.
    brain("log", "rate", "999", "--up", code=1)


def test_index_rebuild_opens_the_knowledge_base_once(brain: Run, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(note_text(f"note {i}", 2), encoding="utf-8")
    brain("index", str(notes))
    assert brain("index", "--rebuild").opened == Counter({"knowledge": 1})
