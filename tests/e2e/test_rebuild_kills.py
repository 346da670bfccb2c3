"""`brain index --rebuild` SIGKILLed at many points: the next command finishes it, nothing lost.

The home's files changed since the last index (a note edited, one deleted, one added), so the
rebuild embeds new text, keeps the vectors of unchanged chunks and leaves orphans for its
closing reconcile. It is killed (tests/e2e/killpoints.py: just before a chosen Python call of
its own run) at the first call of each of its steps — the transaction's `clear_index`, the
first upsert, the first batch commit, the reconcile after the commit, the snapshot refresh —
and at seeded random calls in between. After each kill:
- a search right away answers from the unchanged notes (the old index until the commit, the
  new one after it);
- the next index command (`--rebuild` again, or `--sync`) exits 0 and leaves exactly the
  chunks, keyword rows and vectors of an uninterrupted rebuild, and the added note is found;
- that command sends no unchanged note's text to the model (embeddings of unchanged content
  come from the cache or the dense snapshot).
The fake Ollama serves the embeddings, so a run costs a fork, not a model load.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import brain_env, write_config
from tests.e2e.killpoints import KillWorker, Outcome
from tests.e2e.stores import dump, knowledge_state
from tests.fake_ollama import FakeOllamaServer
from tests.fixtures.knowledge import note_text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SEED = 20261202
RANDOM_KILLS = 6
KEPT = "Heliotropewombat"  # in every note the rebuild finds unchanged
ADDED = "Cobaltmarmoset"  # only in the note added before the rebuild
STEPS = ("clear_index", "upsert", "_commit", "reconcile", "_refresh_snapshot")


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KillWorker]:
    with KillWorker.started(brain_env(), tmp_path_factory.mktemp("scratch")) as kill:
        yield kill


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory, fake: FakeOllamaServer,
            worker: KillWorker) -> Path:
    """A base holding `notes/` and `home/`: indexed, then three notes changed on disk."""
    base = tmp_path_factory.mktemp("changed")
    notes, home = base / "notes", base / "home"
    notes.mkdir()
    for i in range(4):
        (notes / f"kept{i}.md").write_text(
            note_text(f"{KEPT} {i}", 3, seed=i), encoding="utf-8")
    (notes / "edited.md").write_text(note_text("Garden", 3, seed="before"), encoding="utf-8")
    (notes / "deleted.md").write_text(note_text("Bicycle", 3), encoding="utf-8")
    write_config(home, fake, embedding="ollama:nomic-embed-text")
    indexed = worker.run(home, "index", str(notes))
    assert indexed.code == 0, indexed.output
    (notes / "edited.md").write_text(note_text("Garden", 3, seed="after"), encoding="utf-8")
    (notes / "deleted.md").unlink()
    (notes / "added.md").write_text(note_text(f"{ADDED} added", 3), encoding="utf-8")
    return base


def _copy(changed: Path, to: Path) -> Path:
    """A copy of the changed home (its notes folder is shared: the rebuild only reads it)."""
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(changed / "home", to, symlinks=True)
    return to


def _hits(found: Outcome) -> list[dict[str, Any]]:
    assert found.code == 0, found.output
    text = found.output
    return list(json.loads(text[text.index("{"):])["hits"])


def _embedded(fake: FakeOllamaServer) -> str:
    return json.dumps([r.body for r in fake.requests_to("/api/embed")])


def test_a_killed_rebuild_is_finished_by_the_next_index_command(
        changed: Path, fake: FakeOllamaServer, worker: KillWorker, tmp_path: Path) -> None:
    clean = _copy(changed, tmp_path / "clean")
    ran = worker.run(clean, "index", "--rebuild", count=True)
    assert ran.code == 0, ran.output
    after = knowledge_state(clean)
    assert any(ADDED in text for _, text in after["content"])
    assert not any(source.endswith("deleted.md") for source, _ in after["content"])
    assert sorted(after["vectors"]) == sorted(after["chunks"])
    first = ran.first or {}
    steps = [first[name] for name in STEPS if name in first]
    assert len(steps) == len(STEPS), f"a step of the rebuild was never entered: {first}"
    rng = random.Random(SEED)
    points = sorted({*steps, *rng.sample(range(steps[0], ran.calls), RANDOM_KILLS)})
    outcomes: list[str] = []
    for n, point in enumerate(points):
        home = _copy(changed, tmp_path / "killed")
        killed = worker.run(home, "index", "--rebuild", kill_at=point)
        assert killed.killed or killed.code == 0, killed.output
        outcomes.append("killed" if killed.killed else "completed")
        hits = _hits(worker.run(home, "search", f"{KEPT} 2", "--json"))
        assert any(KEPT in json.dumps(h) for h in hits), \
            f"kill at call {point}: no search answer right after the kill"
        nxt = ("index", "--rebuild") if n % 2 == 0 else ("index", "--sync")
        fake.clear_requests()
        finished = worker.run(home, *nxt)
        assert finished.code == 0, f"kill at call {point}: {nxt}\n{finished.output}"
        assert "Traceback" not in finished.output
        assert KEPT not in _embedded(fake), \
            f"kill at call {point}: {nxt} sent unchanged notes to the model"
        state = knowledge_state(home)
        assert state == after, f"kill at call {point}, then {nxt}:\n{dump(state)}"
        hits = _hits(worker.run(home, "search", f"{ADDED} added", "--json"))
        assert any(ADDED in json.dumps(h) for h in hits), f"kill at call {point}: not found"
    print(f"rebuild: kills at calls {points} of {ran.calls} (steps {steps}): {outcomes}")
    assert outcomes.count("killed") >= len(STEPS), outcomes
