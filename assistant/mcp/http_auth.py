"""Where `brain mcp --http` listens and who may talk to it.

Loopback (127.0.0.1, ::1, localhost) by default. Any other address serves the user's notes and
memories to the network, so it needs a bearer token (`mcp.token` or `--token-file`) and is
refused without one. With a token set, every request must carry `Authorization: Bearer
<token>`, on loopback too.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.errors import UserError

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Bind:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False  # a host name: it may resolve to anything

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"


def parse_bind(text: str) -> Bind:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT`."""
    value = text.strip()
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"--http {text!r}: expected PORT or HOST:PORT (e.g. 8765 or "
                        "127.0.0.1:8765)")
    return Bind(host, int(port))


def resolve_token(bind: Bind, *, configured: str, token_file: str | None) -> str | None:
    """The token requests must carry (None: none needed); refuses an open non-loopback bind."""
    token = configured.strip() or None
    if token_file:
        try:
            token = Path(token_file).expanduser().read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise UserError(f"--token-file {token_file}: {exc.strerror or exc}") from None
        if token is None:
            raise UserError(f"--token-file {token_file} is empty")
    if token is None and not bind.loopback:
        raise UserError(
            f"refusing to serve {bind.host} without a token: anyone who can reach it could "
            "read your notes and memories",
            hint="set mcp.token in the config or pass --token-file FILE, or bind to "
            "127.0.0.1")
    if token is not None and len(token) < 16:
        raise UserError("the MCP token is shorter than 16 characters",
                        hint="use a long random one: python -c 'import secrets; "
                        "print(secrets.token_urlsafe(32))'")
    return token


def require_bearer(app: App, token: str) -> App:
    """`app` behind a bearer-token check (constant-time comparison)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                body = b'{"error": "missing or wrong bearer token"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b'Bearer realm="second-brain"'),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return guarded
