"""serve_registry and Agent.start return the address to dial, Unix sockets included."""
from __future__ import annotations

from pathlib import Path

from controller.registry import FlowRegistry, serve_registry


def test_registry_on_a_unix_socket_returns_that_socket(tmp_path: Path) -> None:
    bind = f"unix:{tmp_path / 'registry.sock'}"
    server, address = serve_registry(FlowRegistry(b"secret", {}), bind)
    try:
        assert address == bind
    finally:
        server.stop(0).wait()


def test_registry_on_tcp_port_zero_returns_the_bound_port() -> None:
    server, address = serve_registry(FlowRegistry(b"secret", {}), "127.0.0.1:0")
    try:
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
    finally:
        server.stop(0).wait()
