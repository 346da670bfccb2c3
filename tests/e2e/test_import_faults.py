"""Imports killed at many points converge to exactly one clean import (issue 22).

`brain memory import` and `brain sessions import` run in a copy of one configured home and
are SIGKILLed just before a seeded random Python call of their own run (10 or more points
each, drawn from where the import begins to its end: tests/e2e/killpoints.py, the one way
to kill). Then the next, unrelated command works; the user runs the same import again, which
resumes, finishes what the killed run left, or (killed after its end) is refused as a repeat;
and every count equals a clean run's: the same memories or turns, no duplicates, no row
without its vector or index unit, no vector or unit without its row, the import recorded
as finished.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.paths import resolve_paths
from tests.e2e.conftest import BRAIN, brain_env, write_config
from tests.e2e.killpoints import KillWorker, Outcome
from tests.e2e.stores import conversation_vector_ids, dump, memory_state
from tests.fake_ollama import FakeOllamaServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SEED = 20261202
KILLS = 10
EMBEDDING = "ollama:nomic-embed-text"
DIMENSION = 768  # the fake's nomic-embed-text
WORDS = ["restic", "backup", "kernel", "garden", "bread", "coffee", "router", "printer",
         "docker", "invoice", "harbour", "violin", "lantern", "compass"]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KillWorker]:
    if not BRAIN.exists():
        pytest.skip(f"`brain` is not installed at {BRAIN}")
    with KillWorker.started(brain_env(), tmp_path_factory.mktemp("scratch")) as kill:
        yield kill


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, fake: FakeOllamaServer, worker: KillWorker
         ) -> Path:
    """A configured home with one memory the user typed: every run starts from a copy."""
    home = tmp_path_factory.mktemp("base") / "home"
    write_config(home, fake, embedding=EMBEDDING, extra="[memory]\nextract_every_turns = 0\n")
    added = worker.run(home, "memory", "add", "I drink green tea every morning")
    assert added.code == 0, added.output
    return home


def _copy(home: Path, to: Path) -> Path:
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(home, to, symlinks=True)
    return to


def _memory_lines(n: int, rng: random.Random) -> str:
    rows = [{"text": f"The user keeps item {i}: " + " ".join(rng.choice(WORDS) for _ in range(5)),
             "type": rng.choice(["fact", "preference"])} for i in range(n)]
    rows += [{"text": "The user repeats this line.", "type": "fact"}] * 2  # kept twice: no dedup
    return "".join(json.dumps(r) + "\n" for r in rows)


def _session_lines(sessions: int, turns: int, rng: random.Random) -> str:
    lines = []
    for s in range(sessions):
        for t in range(turns):
            at = 1_700_000_000 + s * 86_400 + t * 60
            words = " ".join(rng.choice(WORDS) for _ in range(6))
            lines.append({"session": f"chat{s}", "role": "user", "created_at": at,
                          "text": f"Question {s}.{t} about {words}?", "title": f"Chat {s}"})
            lines.append({"session": f"chat{s}", "role": "assistant", "created_at": at + 5,
                          "text": f"Answer {s}.{t}: {words}."})
    return "".join(json.dumps(line) + "\n" for line in lines)


def _memories(home: Path, worker: KillWorker) -> dict[str, Any]:
    # The CLI writes memory vectors lazily; any recall catches up (as test_faults.py).
    settled = worker.run(home, "memory", "search", "tea")
    assert settled.code == 0, settled.output
    state = memory_state(home, model=EMBEDDING, dimension=DIMENSION)
    runs = _rows(resolve_paths(home).memory_db,
                 "SELECT total, committed, added, finished_at IS NOT NULL, vectors_done "
                 "FROM imports")
    return {**state, "runs": runs}


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _conversations(home: Path, worker: KillWorker) -> dict[str, Any]:
    """What the sessions database and the conversation index hold, ids aside (a killed run's
    rolled-back rows may shift them), and whether every unit has its vector and back."""
    db = resolve_paths(home).sessions_db
    turns = _rows(db, "SELECT s.title, s.created_at, s.updated_at, t.seq, t.question, t.answer, "
                      "t.created_at, t.status FROM turns t JOIN sessions s ON s.id = t.session_id")
    units = {str(r[0]) for r in _rows(db, "SELECT id FROM conversation_units")}
    vectors = set(conversation_vector_ids(home, model=EMBEDDING, dimension=DIMENSION))
    identity = Counter(turns)
    return {
        "sessions": _rows(db, "SELECT count(*), count(DISTINCT title) FROM sessions"),
        "turns": sorted(identity.items(), key=repr),
        "duplicates": [t for t, n in identity.items() if n > 1],
        "units": Counter(r[0] for r in _rows(db, "SELECT kind FROM conversation_units")),
        "keywords": _rows(db, "SELECT count(*) FROM conversation_fts")[0][0],
        "units_without_vector": len(units - vectors),
        "vectors_without_unit": len(vectors - units),
        "runs": _rows(db, "SELECT total, committed, added, finished_at IS NOT NULL "
                          "FROM session_imports"),
    }


# (command, lines, their shape, state, where the run is recorded, where its stored part
# begins). Sessions: 300 turns, two batches of the import's 256; memories: one batch of its 512
# (a line costs ~50 ms at load; tests/e2e/test_import_resume.py stops a many-batch import at
# every step, in process). Only our own calls are counted: the embedding and Chroma's work
# after a batch's commit are a few hundred of them, after thousands spent checking lines.
# `lines` takes the shape's numbers and then the random source, so it stays `...`.
Import = tuple[list[str], Callable[..., str], tuple[int, ...],
               Callable[[Path, KillWorker], dict[str, Any]], str, str]
IMPORTS: dict[str, Import] = {
    "memory": (["memory", "import"], _memory_lines, (150,), _memories, "begin_import",
               "upsert_vectors"),
    "sessions": (["sessions", "import"], _session_lines, (20, 15), _conversations,
                 "begin_run", "embed_documents"),
}


def _repeat_refused(ran: Outcome) -> bool:
    """A re-run after a kill that came once the import was complete: refused as a repeat."""
    return ran.code == 1 and "already imported" in ran.output and "--again" in ran.output


@pytest.mark.parametrize("kind", sorted(IMPORTS))
def test_killed_import_converges_to_one_clean_import(
        kind: str, base: Path, worker: KillWorker, tmp_path: Path) -> None:
    command, lines, shape, state_of, mark, stored = IMPORTS[kind]
    source = tmp_path / f"{kind}.jsonl"
    source.write_text(lines(*shape, random.Random(f"{SEED}-{kind}")), encoding="utf-8")
    args = [*command, str(source)]

    clean = _copy(base, tmp_path / "clean")
    ran = worker.run(clean, *args, count=True)
    assert ran.code == 0, ran.output
    expected = state_of(clean, worker)
    assert not expected["duplicates"] or kind == "memory", dump(expected)
    # Kill points from just before the run is recorded (parsing is all or nothing) to the end,
    # half of them from where the stored part begins (see IMPORTS).
    first = ran.first or {}
    start, late = first.get(mark, 11), first.get(stored, ran.calls // 2)
    rng = random.Random(f"{SEED}-{kind}-points")
    points = sorted(rng.sample(range(start - 10, late), KILLS // 2)
                    + rng.sample(range(late, ran.calls), KILLS - KILLS // 2))
    outcomes: list[str] = []
    for point in points:
        home = _copy(base, tmp_path / "killed")
        killed = worker.run(home, *args, kill_at=point)
        assert killed.killed or killed.code == 0, killed.output
        nxt = worker.run(home, "config", "path")  # the cheapest next command
        assert nxt.code == 0 and "Traceback" not in nxt.output, nxt.output
        again = worker.run(home, *args)
        assert "Traceback" not in again.output, again.output
        assert again.code == 0 or _repeat_refused(again), \
            f"kill at call {point}: the re-run failed:\n{again.output}"
        state = state_of(home, worker)
        assert state == expected, f"kill at call {point} (re-run: {again.output.strip()}):\n" \
                                  f"{dump(state)}\nclean:\n{dump(expected)}"
        outcomes.append("refused-repeat" if again.code else
                        "resumed" if "resuming import" in again.output else
                        "repaired" if "stopped" in again.output else "from-scratch")
    print(f"{kind} import: {len(points)} kills at calls {points} of {ran.calls}: {outcomes}")
    assert {"resumed", "repaired"} & set(outcomes), \
        f"no kill left a partly stored import: {outcomes}"
