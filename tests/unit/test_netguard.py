import socket

import pytest

from tests.netguard import NetworkAccessError


def test_non_loopback_connection_is_refused() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(
        NetworkAccessError
    ):
        sock.connect(("93.184.216.34", 80))


def test_name_resolution_of_outside_host_is_refused() -> None:
    with pytest.raises(NetworkAccessError):
        socket.getaddrinfo("huggingface.co", 443)


def test_loopback_is_allowed() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=2):
            pass


def test_udp_to_outside_is_refused_and_loopback_allowed() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(NetworkAccessError):
            sock.sendto(b"x", ("8.8.8.8", 53))
        with pytest.raises(NetworkAccessError):
            sock.sendto(b"x", 0, ("8.8.8.8", 53))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
            receiver.bind(("127.0.0.1", 0))
            assert sock.sendto(b"ok", receiver.getsockname()) == 2
            assert receiver.recv(2) == b"ok"
