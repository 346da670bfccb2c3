"""Start-up and the status line: loading the models, Ollama's state, the index and memory
counts, retrieval warnings, and switching the chat model.

The chat model is preloaded at start (once the embedding model is loaded: on a busy 2-core
machine the HTTP client's import would slow that down), when it is changed (F4) and when Ollama
comes back: an empty chat request with the turns' num_ctx and keep_alive, so the first question
neither pays the load (minutes on a CPU) nor a reload. It is a worker on the UI's loop awaiting
HTTP, so the UI never waits for it; the status line counts its seconds. A newer preload cancels
the older one, which closes its request and makes Ollama drop that load.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from indexing.threads import start_daemon
from tui.views import OllamaStatus
from tui.workers import Failure, Refresh, Repeats, attempt, attempt_async, on_loop, outcome

if TYPE_CHECKING:
    from tui.screens.chat import ChatScreen

log = logging.getLogger(__name__)
PRELOAD_TICK_SECONDS = 1.0
# Failures the banner explains already (Ollama down, model not pulled): no toast for those.
_BANNER_KINDS = frozenset({"unavailable", "model_not_found"})


class StatusController:
    def __init__(self, screen: ChatScreen, *, ollama_poll_seconds: float) -> None:
        self.screen = screen
        self.ollama_poll_seconds = ollama_poll_seconds
        self.ollama_ok: bool | None = None
        self.model_ready = False
        self.warming = threading.Event()  # set while models load (cannot be interrupted)
        self.preloaded: str | None = None  # the chat model Ollama has loaded for us
        self._warned: tuple[str, ...] = ()  # retrieval warnings already shown as a toast
        self._stats_failures = Repeats()
        self.check_ollama = Refresh(screen, "ollama", self._check)
        self.refresh_stats = Refresh(screen, "stats", self._stats)

    def start(self) -> None:
        # The model first: on a busy 2-core machine everything else started now (the Ollama
        # check imports an HTTP client) takes CPU from it. Ollama is checked once it is loaded.
        self.warm_up()
        self.screen.set_interval(self.ollama_poll_seconds, self._poll)

    def _poll(self) -> None:
        self.check_ollama()
        if self.model_ready:
            # Counts change behind our back too (`brain index`, `brain memory …` in another
            # terminal): re-read them, so the status line is never stale for long.
            self.refresh_stats()

    # --- loading the model ---------------------------------------------------------------------

    def warm_up(self) -> None:
        # A daemon thread of its own: a model load cannot be interrupted, and quitting must
        # not wait for it (run_app exits at once when it is still loading).
        self.warming.set()
        loaded = on_loop(self.screen.app, self._loaded)
        start_daemon("brain-warm-up", lambda: self._load(loaded))

    def _load(self, loaded: Callable[[str], None]) -> None:
        try:
            # A broken model install must not kill the UI: said, its traceback logged.
            warmed = outcome("Loading the index", self.screen.backend.knowledge.warm_up)
            if isinstance(warmed, Failure):
                loaded(warmed.message)
                return
            loaded("")
        finally:
            self.warming.clear()
        # Only now: the first answer should not pay for the Markdown widget's import
        # (markdown-it), but the model must not wait for it either.
        with contextlib.suppress(Exception):
            import textual.widgets._markdown  # noqa: F401

    def _loaded(self, error: str) -> None:
        status = self.screen.status_bar
        self.check_ollama()
        self.preload()  # after the embedding model too: its import would compete for the CPU
        if error:
            status.index = "index unavailable"
            self.screen.notify(f"Cannot load the index: {error}", severity="error", timeout=15)
            return
        self.model_ready = True
        self.refresh_stats()
        self.screen.indexing.watch()
        # The first answer should not pay for the LLM client import and the stores opening;
        # a failure here is reported by that first turn instead.
        self.screen.run_worker(self._warm_chat(), group="warm-up")

    async def _warm_chat(self) -> None:
        with contextlib.suppress(Exception):
            await self.screen.backend.chat.warm_up()

    # --- the chat model in Ollama ----------------------------------------------------------------

    def preload(self) -> None:
        if self.screen.chat.generating is not None:
            # A question asked before the embedding model was ready is being answered: that
            # turn loads the chat model itself, and a preload now would select the session by
            # an id the turn has not reported yet (a new, empty session under the answer).
            return
        model = self.screen.chat.model
        self.screen.run_worker(self._preload(model), group="preload", exclusive=True)

    async def _preload(self, model: str) -> None:
        bar = self.screen.status_bar
        started = time.monotonic()
        shown = ""

        def tick() -> None:
            nonlocal shown
            if self.screen.chat.generating is None:  # else the turn shows its own wait
                shown = f"loading {model}… {time.monotonic() - started:.0f} s"
                bar.model_activity = shown

        # The first tick after a second: an already loaded model answers in milliseconds.
        timer = self.screen.set_interval(PRELOAD_TICK_SECONDS, tick)
        self.preloaded = None

        def failed(failure: Failure) -> None:
            # Shown; the first question reports it again if it lasts.
            log.info("preloading %s failed: %s", model, failure.message)
            if (getattr(failure.error, "kind", "") not in _BANNER_KINDS
                    and not self.screen.quitting):
                self.screen.notify(f"Could not load {model}: {failure.message}",
                                   severity="warning", timeout=8)

        try:
            seconds = await attempt_async(
                self.screen.app, f"Preloading {model}",
                lambda: self.screen.backend.chat.preload(self.screen.chat.session_id, model),
                shown=failed)
            if seconds is not None:
                log.info("preloaded %s in %.1f s", model, seconds)
                self.preloaded = model
        finally:
            timer.stop()
            if shown and bar.model_activity == shown:
                bar.model_activity = ""

    # --- Ollama ---------------------------------------------------------------------------------

    async def _check(self) -> None:
        model = self.screen.chat.model

        def failed(failure: Failure) -> None:  # a broken client install: said in the banner
            self._checked(OllamaStatus(False, message=f"cannot check {self._server()}: "
                                                      f"{failure.message}"))

        status = await attempt(self.screen.app, "Checking the model server",
                               lambda: self.screen.backend.ollama.status(model), shown=failed)
        if status is not None:
            self._checked(status)

    def _server(self) -> str:
        """"Ollama" or "the model server": the messages name the configured provider."""
        return self.screen.backend.ollama.server_name()

    def _checked(self, status: OllamaStatus) -> None:
        was = self.ollama_ok
        self.ollama_ok = status.ok
        self.screen.banner.show_status(status, self.screen.chat.model)
        bar = self.screen.status_bar
        bar.ollama = "up" if status.ok else ("no model" if status.model_missing else "down")
        if status.ok and was is False:
            self.screen.notify(f"{self._server()[:1].upper()}{self._server()[1:]} is back: chat is "
                               "available again.")
            if self.preloaded != self.screen.chat.model:
                self.preload()

    def choose_model(self) -> None:
        from tui.screens.model_picker import ModelPicker

        def chosen(name: str | None) -> None:
            if name:
                self.screen.chat.model = name
                self.screen.status_bar.model = name
                self.screen.notify(f"Chat model: {name} (this session continues)")
                self.check_ollama()
                self.preload()

        picker = ModelPicker(self.screen.backend.ollama, self.screen.chat.model)
        self.screen.app.push_screen(picker, chosen)

    # --- counts and warnings --------------------------------------------------------------------

    async def _stats(self) -> None:
        backend = self.screen.backend
        counts = await attempt(self.screen.app, "Reading the index",
                               lambda: (*backend.knowledge.stats(), backend.memory.count()),
                               repeats=self._stats_failures)  # said once, not at every poll
        if counts is None:
            return
        files, chunks, memories = counts
        self.screen.status_bar.set_index(files, chunks)
        self.screen.status_bar.memories = memories

    def show_warnings(self, warnings: tuple[str, ...]) -> None:
        """In the status line (it stays until the next activity) and once as a toast."""
        if not warnings:
            return
        self.screen.status_bar.activity = f"⚠ {warnings[0]}"
        if warnings != self._warned:
            self._warned = warnings
            self.screen.notify("\n".join(warnings), severity="warning", timeout=10)
