"""Addresses and receive bounds of the agent protocol's gRPC servers (registry and agents).

:func:`server_options` are the options both servers are built with: their port is
theirs alone (no ``SO_REUSEPORT``) and a request longer than the server's bound
(:data:`MAX_AGENT_REQUEST_BYTES`, :data:`MAX_REGISTRY_REQUEST_BYTES`) is refused by gRPC
with ``RESOURCE_EXHAUSTED`` on its length prefix, before it is buffered.

``add_insecure_port`` returns the TCP port it bound (useful with ``host:0``); for a Unix
socket (``unix:/path``) the port it returns means nothing and the address to dial is the
bind address itself. Both sides use :func:`bound_address` so they agree.

Example::

    >>> bound_address("127.0.0.1:0", 40123)
    '127.0.0.1:40123'
    >>> bound_address("unix:/run/astral/registry.sock", 1)
    'unix:/run/astral/registry.sock'
    >>> server_options(MAX_AGENT_REQUEST_BYTES)
    [('grpc.so_reuseport', 0), ('grpc.max_receive_message_length', 65536)]
"""
from __future__ import annotations

MAX_AGENT_REQUEST_BYTES = 64 * 1024
"""The largest request a host's agent takes (64 KiB). Its largest legitimate one is a
``MoveOrder`` (227 bytes with a 64-character order id and host name, the largest
5-tuple flow id and every optional field set; ``StatusRequest`` is empty): the bound is
~290 times that. gRPC's default, 4 MB, let any client that passes the handshake make the
agent buffer 4 MB per call."""
MAX_REGISTRY_REQUEST_BYTES = 2 * 1024 * 1024
"""The largest request GOR's registry takes (2 MiB). Its largest legitimate one is a
``RegisterRequest`` of ``controller.registry.MAX_FLOWS_PER_HOST`` (4,096) flows, each with
the longest default flow id (``255.255.255.255>255.255.255.255/qp16777215``) and every
field at its widest: 487,547 bytes (117 per flow); the bound is ~4 times that, for flow
ids longer than the default form."""


def server_options(max_receive_bytes: int) -> list[tuple[str, int]]:
    """gRPC server options of an agent-protocol server that takes requests of at most
    ``max_receive_bytes``: no port sharing, and gRPC's receive bound set."""
    return [("grpc.so_reuseport", 0),        # the port is ours alone
            ("grpc.max_receive_message_length", int(max_receive_bytes))]


def bound_address(bind: str, port: int) -> str:
    """The address to dial for a server bound to ``bind`` that reported ``port``."""
    if bind.startswith("unix:"):
        return bind
    return f"{bind.rsplit(':', 1)[0]}:{port}"
