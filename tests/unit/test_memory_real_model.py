"""Memory search and duplicate detection with the real bundled MiniLM model (loaded once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.memory import reconcile
from assistant.memory.model import MemoryType, NewMemory
from assistant.memory.recall import search
from assistant.memory.store import MemoryStore
from tests.fixtures.memory import MemoryVectors

pytestmark = pytest.mark.slow


@pytest.fixture
def real_store(tmp_path: Path, real_embedder, fake_clock):
    vectors = MemoryVectors()
    store = MemoryStore(tmp_path / "m.sqlite3", embedder=lambda: real_embedder,
                        vectors=lambda: vectors, clock=fake_clock)
    yield store
    store.close()


def test_paraphrases_are_duplicates_and_new_facts_are_not(real_store: MemoryStore) -> None:
    real_store.add(NewMemory("The user works as a nurse at Leeds General Infirmary"))
    same = NewMemory("The user works as a nurse at the Leeds General Infirmary.")
    assert reconcile.decide(real_store, same).action is reconcile.Action.SKIP
    different = NewMemory("The user's sister works as a teacher in York")
    assert reconcile.decide(real_store, different).action is reconcile.Action.ADD


def test_semantic_search_finds_paraphrased_questions(real_store: MemoryStore) -> None:
    facts = [
        ("The user is allergic to penicillin", MemoryType.FACT),
        ("The user prefers answers with code examples in Python", MemoryType.PREFERENCE),
        ("The user adopted a rescue greyhound named Pixel in March", MemoryType.EPISODE),
        ("The user deploys with `make release` and then tags the commit", MemoryType.PROCEDURE),
    ]
    for text, mtype in facts:
        real_store.add(NewMemory(text, type=mtype))
    assert search(real_store, "which antibiotics should I avoid?", top_k=1)[0].memory.text == (
        facts[0][0])
    assert search(real_store, "tell me about my dog", top_k=1)[0].memory.type is (
        MemoryType.EPISODE)
    assert search(real_store, "how do I ship a new version", top_k=1)[0].memory.type is (
        MemoryType.PROCEDURE)
