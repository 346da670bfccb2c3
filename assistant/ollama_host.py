"""Where an Ollama host setting comes from (the config file or OLLAMA_HOST), for the defaults
and for hints; the URL shape itself is indexing/ollama_http.normalize_host."""

from __future__ import annotations

import os

from indexing.ollama_http import DEFAULT_HOST, DEFAULT_PORT, normalize_host

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "ENV_VAR", "env_host", "from_env", "host_origin",
           "host_setting", "normalize_host"]

ENV_VAR = "OLLAMA_HOST"  # the variable the `ollama` CLI and server read


def env_host() -> str | None:
    """The client URL OLLAMA_HOST names, or None when it is unset or blank."""
    raw = os.environ.get(ENV_VAR, "").strip()
    return normalize_host(raw) if raw else None


def from_env(host: str) -> bool:
    """Whether `host` is the one OLLAMA_HOST gives (the config's default when the file sets no
    [ollama] host). A file that sets the same URL counts too: the advice then names both."""
    env = env_host()
    return env is not None and env == normalize_host(host)


def host_setting(host: str) -> str:
    """Where the user changes `host`, for a hint ("check …"): an error about a host that came
    from the environment must send the user there, not to a config file that never named it."""
    if from_env(host):
        return (f"{ENV_VAR} in your environment ([ollama] host in `brain config edit` "
                "overrides it)")
    return "[ollama] host in `brain config edit`"


def host_origin(host: str) -> str:
    """" (from OLLAMA_HOST)" after a host the environment gave, else ""."""
    return f" (from {ENV_VAR})" if from_env(host) else ""
