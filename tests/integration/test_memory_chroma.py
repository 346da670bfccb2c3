"""The memory store over the real Chroma collection `memories` (HashEmbedder vectors)."""

from __future__ import annotations

from pathlib import Path

from assistant.config import Config
from assistant.context import AppContext
from assistant.memory.model import NewMemory
from assistant.memory.service import MemoryService
from assistant.paths import resolve_paths
from tests.fakes import HashEmbedder


def _service(home: Path, embedder: HashEmbedder) -> MemoryService:
    paths = resolve_paths(home).ensure()
    return MemoryService.open(AppContext(paths=paths, config=Config(), _embedder=embedder))


def test_chroma_search_forget_all_and_model_change(tmp_path: Path) -> None:
    home = tmp_path / "home"
    service = _service(home, HashEmbedder(dimension=64, model_id="test:hash-64"))
    marker = "wombatquasar"
    ids = [service.store.add(NewMemory(f"The user's {marker} hobby {i} is birdwatching")).id
           for i in range(3)]
    other = service.store.add(NewMemory("The user bakes sourdough bread on Fridays"))
    assert service.search("sourdough bread", 1)[0].memory.id == other.id
    assert service.store.vectors().count() == 4
    service.store.delete(ids[0])
    assert ids[0] not in [r.memory.id for r in service.search("birdwatching hobby", 10)]
    service.close()

    # Another embedding model: the collection is rebuilt from SQLite on first use.
    service = _service(home, HashEmbedder(dimension=32, model_id="test:hash-32"))
    assert service.search("sourdough bread", 1)[0].memory.id == other.id
    assert service.store.vectors().count() == 3
    assert service.store.forget_all() == 4
    service.close()
    data = home / "data"
    assert (data / "chroma").is_dir()
    leftovers = [p for p in data.rglob("*") if p.is_file() and marker.encode() in p.read_bytes()]
    assert leftovers == []
    service = _service(home, HashEmbedder(dimension=32, model_id="test:hash-32"))
    assert service.store.list() == [] and service.search("birdwatching", 5) == []
    service.close()
