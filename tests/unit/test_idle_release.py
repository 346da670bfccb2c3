"""The embedding model gives its memory back when idle and loads again on the next call:
decided on a fake clock (no sleeps), and safe against a call that races the release."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from indexing.embedder import CachedEmbedder
from indexing.idle_release import IdleRelease
from indexing.lazy import Lazy

WAIT = 30.0  # generous bound for a thread under load; every wait below is for an exact state


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Weights:
    """What a loaded model holds; `alive` is False once it was freed."""

    def __init__(self) -> None:
        self.alive = True


class LoadCountingModel:
    """An `InnerModel` whose weights sit in a `Lazy` like the real ones: `loads` counts opens,
    and encoding with freed weights fails, as using a closed session would."""

    model_id = "fake:idle"

    def __init__(self) -> None:
        self.loads = 0
        self._weights: Lazy[Weights] = Lazy(self._open, close=self._free)
        self.in_encode = threading.Event()  # set while an encode runs
        self.finish_encode = threading.Event()
        self.finish_encode.set()
        self.in_unload = threading.Event()
        self.finish_unload = threading.Event()
        self.finish_unload.set()

    def _open(self) -> Weights:
        self.loads += 1
        return Weights()

    @staticmethod
    def _free(weights: Weights) -> None:
        weights.alive = False

    def is_loaded(self) -> bool:
        # A method, not a property: the type checker keeps a property's narrowed value
        # (`assert model.is_loaded()`) across the embedder's calls that free the weights.
        return self._weights.peek() is not None

    def known_dimension(self) -> int | None:
        return 3

    def load(self) -> None:
        self._weights.get()

    def unload(self) -> bool:
        self.in_unload.set()
        assert self.finish_unload.wait(WAIT)
        loaded = self.is_loaded()
        self._weights.close()
        return loaded

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        weights = self._weights.get()
        self.in_encode.set()
        assert self.finish_encode.wait(WAIT)
        assert weights.alive, "encoded with freed weights"
        return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._vectors(texts)

    def encode_query(self, text: str) -> np.ndarray:
        return self._vectors([text])[0]


def embedder(tmp_path: Path, idle: float, clock: FakeClock) -> tuple[CachedEmbedder,
                                                                     LoadCountingModel]:
    model = LoadCountingModel()
    return CachedEmbedder(model, tmp_path / "cache", idle_unload_seconds=idle, clock=clock), model


def test_the_model_is_freed_after_the_idle_time_and_reloaded_by_the_next_call(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    emb, model = embedder(tmp_path, 300, clock)
    first = emb.embed_query("rotate the logs")
    assert model.is_loaded() and model.loads == 1

    clock.now += 299
    assert emb.idle.check() == pytest.approx(1)
    assert model.is_loaded()  # not yet idle long enough

    emb.embed_documents(["a new note"])  # a use restarts the countdown
    clock.now += 299
    emb.idle.check()
    assert model.is_loaded()

    clock.now += 1
    assert emb.idle.check() is None  # freed: nothing left to watch
    assert not model.is_loaded() and emb.idle.releases == 1

    again = emb.embed_query("rotate the logs, again")  # transparent reload
    assert model.is_loaded() and model.loads == 2
    assert again.shape == first.shape
    assert emb.idle.check() == pytest.approx(300)  # and the countdown runs again


def test_zero_keeps_the_model_loaded(tmp_path: Path) -> None:
    clock = FakeClock()
    emb, model = embedder(tmp_path, 0, clock)
    emb.embed_query("q")
    clock.now += 10**9
    assert emb.idle.check() is None
    assert model.is_loaded() and emb.idle.releases == 0


def test_cached_texts_do_not_load_or_keep_the_model(tmp_path: Path) -> None:
    clock = FakeClock()
    emb, model = embedder(tmp_path, 60, clock)
    emb.embed_documents(["kept in the cache"])
    clock.now += 60
    emb.idle.check()
    assert not model.is_loaded()
    emb.embed_documents(["kept in the cache"])  # a cache hit: the model stays unloaded
    assert not model.is_loaded() and model.loads == 1
    assert emb.idle.check() is None


def test_a_release_while_a_call_runs_leaves_the_model_to_that_call(tmp_path: Path) -> None:
    clock = FakeClock()
    emb, model = embedder(tmp_path, 60, clock)
    emb.embed_query("warm")
    clock.now += 61
    model.in_encode.clear()
    model.finish_encode.clear()
    out: list[np.ndarray] = []
    call = threading.Thread(target=lambda: out.append(emb.embed_query("slow search")))
    call.start()
    assert model.in_encode.wait(WAIT)  # the call holds the model now
    assert emb.idle.check() is None  # due, but the model is busy: not freed
    assert model.is_loaded() and emb.idle.releases == 0
    model.finish_encode.set()
    call.join(WAIT)
    assert len(out) == 1
    # The call's end restarted the countdown, so the release happens later.
    assert emb.idle.check() == pytest.approx(60)
    clock.now += 60
    emb.idle.check()
    assert not model.is_loaded() and emb.idle.releases == 1


def test_a_call_that_starts_during_the_release_reloads_and_succeeds(tmp_path: Path) -> None:
    clock = FakeClock()
    emb, model = embedder(tmp_path, 60, clock)
    emb.embed_query("warm")
    clock.now += 60
    model.finish_unload.clear()
    releaser = threading.Thread(target=emb.idle.check)
    releaser.start()
    assert model.in_unload.wait(WAIT)  # the release is under way
    out: list[np.ndarray] = []
    errors: list[BaseException] = []

    def search() -> None:
        try:
            out.append(emb.embed_query("a search racing the release"))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    call = threading.Thread(target=search)
    call.start()
    model.finish_unload.set()
    releaser.join(WAIT)
    call.join(WAIT)
    assert errors == [] and len(out) == 1
    assert model.is_loaded() and model.loads == 2 and emb.idle.releases == 1


def test_the_background_thread_releases_on_its_own() -> None:
    released = threading.Event()

    def release() -> bool:
        released.set()
        return True

    idle = IdleRelease(release, 0.01)
    idle.used()
    assert released.wait(WAIT)
    assert idle.check() is None  # nothing held any more


def test_a_model_without_unload_starts_no_countdown(tmp_path: Path) -> None:
    class ServerModel:  # like Ollama's: the server holds the weights
        model_id = "fake:server"

        def known_dimension(self) -> int | None:
            return 3

        def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
            return np.ones((len(texts), 3), dtype=np.float32)

        def encode_query(self, text: str) -> np.ndarray:
            return np.ones(3, dtype=np.float32)

    emb = CachedEmbedder(ServerModel(), tmp_path / "cache", idle_unload_seconds=60)
    emb.embed_query("q")
    assert not emb.idle.enabled and emb.idle.check() is None


@pytest.mark.parametrize(("seconds", "enabled"), [(None, True), (0.0, False)])
def test_the_app_embedder_follows_the_setting(
    tmp_path: Path, seconds: float | None, enabled: bool
) -> None:
    from dataclasses import replace

    from assistant.context import AppContext

    ctx = AppContext.load(str(tmp_path / "home"))
    if seconds is not None:
        ctx = AppContext(paths=ctx.paths, config=replace(
            ctx.config, embedding=replace(ctx.config.embedding, idle_unload_seconds=seconds)))
    emb = ctx.embedder()
    assert isinstance(emb, CachedEmbedder)
    assert emb.idle.enabled is enabled
