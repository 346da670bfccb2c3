"""The composition root: resolved paths plus the validated config for one `brain` invocation.

Subsystems open their own stores from a context (`indexing`, `memory`, `chat` have `open_*`
functions taking it); the context only owns what they share: paths, config and the one
embedding model, which is expensive to load and must be loaded once per process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assistant.config import Config
from assistant.config_load import load_config
from assistant.config_render import ensure_config_file
from assistant.paths import AppPaths, apply_private_umask, resolve_paths

if TYPE_CHECKING:
    from indexing.embedder import Embedder
    from indexing.embedders.remote import RemoteEmbed


@dataclass
class AppContext:
    paths: AppPaths
    config: Config
    # Read-only (`brain doctor`): the embedder neither writes a disk cache nor exports models.
    read_only: bool = False
    _embedder: Embedder | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, home: str | None = None, *, create: bool = True) -> AppContext:
        """Resolve paths, write the default config on first run, load and validate it.

        Raises ConfigError for a bad config file.
        """
        paths = resolve_paths(home)
        if create:
            apply_private_umask()
            paths.ensure()
            ensure_config_file(paths)
        return cls(paths=paths, config=load_config(paths.config_file))

    def _remote_embed(self) -> RemoteEmbed | None:
        """/v1/embeddings of the [llm] server, for `openai:<model>` (None otherwise)."""
        if not self.config.embedding.model.strip().startswith("openai:"):
            return None
        from assistant.llm.provider import OPENAI, link, openai_embed

        server = link(self.config)
        return openai_embed(server, self.config.ollama.timeout) if server.provider == OPENAI \
            else None

    def embedder(self) -> Embedder:
        """The configured embedding model with its disk cache, loaded on first use."""
        with self._lock:
            if self._embedder is None and self.read_only:
                from indexing.embedder import UncachedEmbedder, make_inner_model

                self._embedder = UncachedEmbedder(make_inner_model(
                    self.config.embedding.model,
                    batch_size=self.config.embedding.batch_size,
                    device=self.config.embedding.device,
                    ollama_host=self.config.ollama.host,
                    timeout=self.config.ollama.timeout,
                    remote_embed=self._remote_embed(),
                ))
            if self._embedder is None:
                from indexing.embedder import make_embedder

                self._embedder = make_embedder(
                    self.config.embedding.model,
                    cache_dir=self.paths.embedding_cache_dir,
                    model_dir=self.paths.model_cache_dir,
                    batch_size=self.config.embedding.batch_size,
                    device=self.config.embedding.device,
                    ollama_host=self.config.ollama.host,
                    timeout=self.config.ollama.timeout,
                    remote_embed=self._remote_embed(),
                    idle_unload_seconds=self.config.embedding.idle_unload_seconds,
                )
            return self._embedder
