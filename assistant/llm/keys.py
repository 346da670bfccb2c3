"""The API key of an OpenAI-compatible server: from the environment or a private file, never
from the config file (config.py rejects an `api_key` key there).

A key file readable by the group or others is refused rather than used: a key that other
accounts on the machine can read is already leaked, and using it silently would hide that.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from assistant.errors import UserError


class ApiKeyError(UserError):
    """The configured key cannot be read (unset variable, missing or too open file)."""


def resolve_api_key(env_name: str, key_file: str) -> str | None:
    """The key, or None when none is configured (local servers need none). A configured
    source that yields nothing is an error: a request without the key would fail with a
    401 that says less than this does."""
    env_name = env_name.strip()
    if env_name:
        value = os.environ.get(env_name, "").strip()
        if value:
            return value
        if not key_file.strip():
            raise ApiKeyError(
                f"the API key variable {env_name} is not set",
                f"export {env_name}=… before starting brain, or set llm.api_key_file",
            )
    if key_file.strip():
        return _read_key_file(Path(key_file).expanduser())
    return None


def _read_key_file(path: Path) -> str:
    try:
        info = path.stat()
    except OSError as exc:
        raise ApiKeyError(f"cannot read the API key file {path}: {exc.strerror or exc}",
                          "check llm.api_key_file (`brain config edit`)") from exc
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ApiKeyError(
            f"the API key file {path} is readable by other users "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); refusing to use it",
            f"run `chmod 600 {path}` (and replace the key if others could have read it)",
        )
    try:
        value = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ApiKeyError(f"cannot read the API key file {path}: {exc}",
                          "it should hold the key alone, as text") from exc
    if not value:
        raise ApiKeyError(f"the API key file {path} is empty", "put the key in it")
    return value
