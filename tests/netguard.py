"""Fail any test that opens a network connection to a non-loopback address.

Everything second-brain talks to in tests (the fake Ollama, a Chroma server) is on loopback;
an attempt to reach anything else means some library is phoning home, which the product
promises never to do.
"""

from __future__ import annotations

import _socket
import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_sendto = socket.socket.sendto
_real_getaddrinfo = socket.getaddrinfo

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


class NetworkAccessError(AssertionError):
    pass


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return False
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


# `_socket.socket`: the C base class that defines connect/connect_ex/sendto (socket.socket
# inherits them), so the guards have the methods' own types.
def _check(sock: _socket.socket, address: Any) -> None:
    if sock.family == socket.AF_UNIX:
        return
    host = address[0] if isinstance(address, tuple) else address
    if not _is_loopback(host):
        raise NetworkAccessError(f"test tried to connect to non-loopback address {address!r}")


def _guarded_connect(self: _socket.socket, address: Any) -> None:
    _check(self, address)
    return _real_connect(self, address)


def _guarded_connect_ex(self: _socket.socket, address: Any) -> int:
    _check(self, address)
    return _real_connect_ex(self, address)


def _guarded_sendto(self: _socket.socket, data: Any, *args: Any) -> int:
    # sendto(data, address) or sendto(data, flags, address): UDP needs no connect().
    _check(self, args[-1])
    return _real_sendto(self, data, *args)


def _guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if host is not None and not _is_loopback(host):
        raise NetworkAccessError(f"test tried to resolve non-loopback host {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


def install() -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.socket.sendto = _guarded_sendto  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo


def uninstall() -> None:
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]
    socket.socket.sendto = _real_sendto  # type: ignore[method-assign]
    socket.getaddrinfo = _real_getaddrinfo


@contextmanager
def guarded() -> Iterator[None]:
    install()
    try:
        yield
    finally:
        uninstall()
