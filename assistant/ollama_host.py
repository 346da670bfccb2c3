"""How an Ollama host setting becomes a base URL (shared by the config defaults and the client)."""

from __future__ import annotations

import os

ENV_VAR = "OLLAMA_HOST"  # the variable the `ollama` CLI and server read
DEFAULT_HOST = "http://localhost:11434"
DEFAULT_PORT = 11434


def normalize_host(host: str | None) -> str:
    """Resolve a host the way the `ollama` CLI does.

    `myhost` / `myhost:1234` / `0.0.0.0` (no scheme) are plain Ollama addresses: http, port
    11434 unless given. With a scheme the URL is taken as written (`https://ollama.lan` is port
    443, e.g. behind a reverse proxy). `0.0.0.0` means "listen everywhere" to the server; a
    client must use loopback instead.
    """
    host = (host or "").strip() or DEFAULT_HOST
    if "://" not in host:
        authority, sep, path = host.partition("/")
        if not _has_port(authority):
            authority = f"{authority}:{DEFAULT_PORT}"
        host = f"http://{authority}{sep}{path}"
    host = host.replace("://0.0.0.0", "://127.0.0.1").replace("://[::]", "://[::1]")
    return host.rstrip("/")


def _has_port(authority: str) -> bool:
    # "[::1]:9000" has a port, "[::1]" has none; an IPv6 address alone has many colons.
    if authority.startswith("["):
        return "]:" in authority
    return authority.count(":") == 1


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
