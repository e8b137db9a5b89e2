"""Addresses of the agent protocol's gRPC servers (registry and agents).

``add_insecure_port`` returns the TCP port it bound (useful with ``host:0``); for a Unix
socket (``unix:/path``) the port it returns means nothing and the address to dial is the
bind address itself. Both sides use :func:`bound_address` so they agree.

Example::

    >>> bound_address("127.0.0.1:0", 40123)
    '127.0.0.1:40123'
    >>> bound_address("unix:/run/astral/registry.sock", 1)
    'unix:/run/astral/registry.sock'
"""
from __future__ import annotations


def bound_address(bind: str, port: int) -> str:
    """The address to dial for a server bound to ``bind`` that reported ``port``."""
    if bind.startswith("unix:"):
        return bind
    return f"{bind.rsplit(':', 1)[0]}:{port}"
