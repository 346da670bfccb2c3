"""Where second-brain keeps its config, data and cache.

By default the platform directories (XDG on Linux, ~/Library on macOS). `--home DIR` or
`BRAIN_HOME` puts all three under one folder: tests and benchmarks always use that, so they
never touch the user's real state.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "second-brain"
HOME_ENV = "BRAIN_HOME"

# Private data: only the owner may read notes, memories and chat history.
DIR_MODE = 0o700
FILE_MODE = 0o600
# Every process that touches the data dirs runs with this umask (see `apply_private_umask`), so
# files created by any library — SQLite and its -wal/-shm files, Chroma, diskcache, logs — are
# 0600 and directories 0700 without each call site remembering to chmod.
PRIVATE_UMASK = 0o077


@dataclass(frozen=True, slots=True)
class AppPaths:
    config_dir: Path
    data_dir: Path
    cache_dir: Path

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def themes_dir(self) -> Path:
        """User themes, loaded after the bundled ones."""
        return self.config_dir / "themes"

    @property
    def vectors_dir(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def knowledge_db(self) -> Path:
        return self.data_dir / "knowledge.sqlite3"

    @property
    def memory_db(self) -> Path:
        return self.data_dir / "memory.sqlite3"

    @property
    def sessions_db(self) -> Path:
        return self.data_dir / "sessions.sqlite3"

    @property
    def events_db(self) -> Path:
        """The agent event log (`brain mcp`'s log_event, `brain events`)."""
        return self.data_dir / "events.sqlite3"

    @property
    def retrieval_log_db(self) -> Path:
        return self.data_dir / "retrieval_log.sqlite3"

    @property
    def ui_state_file(self) -> Path:
        return self.data_dir / "ui_state.json"

    @property
    def token_calibration_file(self) -> Path:
        """Per-model factors matching our token estimate to each chat model's tokenizer."""
        return self.data_dir / "token_calibration.json"

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def embedding_cache_dir(self) -> Path:
        return self.cache_dir / "embeddings"

    @property
    def model_cache_dir(self) -> Path:
        """Derived model files made on this machine (ONNX copies of embedding models)."""
        return self.cache_dir / "models"

    @property
    def lock_file(self) -> Path:
        return self.data_dir / "brain.lock"

    def ensure(self) -> AppPaths:
        """Create the directories (mode 0700) and return self."""
        for directory in (self.config_dir, self.data_dir, self.cache_dir):
            ensure_private_dir(directory)
        return self


def apply_private_umask() -> int:
    """Make files this process creates owner-only; returns the previous umask.

    Keeps any stricter bits of the user's own umask. Called by the CLI entry point and by
    `AppContext.load`, so the TUI, commands and benchmarks all get it.
    """
    previous = os.umask(PRIVATE_UMASK)
    os.umask(previous | PRIVATE_UMASK)
    return previous


def private_file(path: Path) -> Path:
    """Restrict an existing file to its owner (for files whose mode the umask did not set)."""
    if path.stat().st_mode & 0o777 != FILE_MODE:
        path.chmod(FILE_MODE)
    return path


def ensure_private_dir(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    # mkdir's mode is masked by the umask and ignored for existing dirs.
    if directory.stat().st_mode & 0o777 != DIR_MODE:
        directory.chmod(DIR_MODE)
    return directory


def resolve_paths(home: str | os.PathLike[str] | None = None) -> AppPaths:
    """Paths for an explicit home, else `BRAIN_HOME`, else the platform directories."""
    chosen = home if home is not None else os.environ.get(HOME_ENV) or None
    if chosen is not None:
        root = Path(chosen).expanduser().resolve()
        return AppPaths(root / "config", root / "data", root / "cache")
    import platformdirs

    return AppPaths(
        Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)),
    )
