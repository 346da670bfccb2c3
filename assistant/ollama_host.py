"""How an Ollama host setting becomes a base URL (shared by the config defaults and the client)."""

from __future__ import annotations

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
