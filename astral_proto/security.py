"""Who is who on the agent protocol: the :class:`Security` each party runs with.

A party is GOR (named :data:`CONTROLLER`) or a host (named after it, ``b0s0``). Its
``Security`` does four things, the same on both sides of every channel:

* ``bind`` a gRPC server so that only authenticated peers can call it;
* ``dial`` a peer by name (the channel proves the server *is* that peer);
* the per-call ``metadata`` it sends to a peer (empty with TLS);
* name the ``caller`` of an incoming call (None: unauthenticated).

Two implementations:

* :class:`astral_proto.tls.MutualTls` — **the default**: mutual TLS with the fabric CA; a
  party's identity is the common name of its certificate, read from the TLS handshake
  (``context.auth_context()``), never from a message or metadata.
* :class:`astral_proto.auth.HostTokens` / :class:`astral_proto.auth.ControllerTokens` —
  the documented **fallback** when no certificates are given (unit tests, ``--insecure``
  runs): plaintext gRPC with HMAC bearer tokens in metadata. Anyone who can read the
  traffic can replay a token; the orders' nonces and expiries still hold.

>>> from astral_proto.auth import HostCredentials
>>> sec = HostCredentials.derive(b"fabric-secret", "b0s0").security()
>>> sec.name, sec.kind, sec.metadata(CONTROLLER)[0]
('b0s0', 'tokens', ('astral-host', 'b0s0'))
"""
from __future__ import annotations

from typing import Optional, Protocol

import grpc

from astral_proto.net import bound_address

CONTROLLER = "controller"
"""The name (certificate common name) of GOR, the only party an agent takes orders from."""

Metadata = tuple[tuple[str, str], ...]


class Security(Protocol):
    """How one party authenticates itself and its peers (see the module docstring)."""

    @property
    def name(self) -> str:
        """This party's name: ``controller`` or a host name."""
        ...

    @property
    def kind(self) -> str:
        """``"mtls"`` or ``"tokens"`` (for logs and status lines)."""
        ...

    def bind(self, server: grpc.Server, address: str) -> int:
        """Add a listening port to ``server``; the port gRPC returns (0: failed)."""
        ...

    def dial(self, address: str, peer: str) -> grpc.Channel:
        """A channel to ``peer`` (a party name) listening at ``address``."""
        ...

    def metadata(self, peer: str) -> Metadata:
        """Metadata for every call to ``peer``."""
        ...

    def caller(self, context: grpc.ServicerContext) -> Optional[str]:
        """The authenticated name of whoever made this call; None when unauthenticated."""
        ...


def listen(server: grpc.Server, security: Security, bind: str, what: str = "server") -> str:
    """Bind ``server`` to ``bind`` with ``security``; returns the address to dial
    (:func:`astral_proto.net.bound_address`); ``OSError`` naming ``what`` when it cannot.

    >>> from concurrent import futures
    >>> from astral_proto.auth import ControllerTokens
    >>> server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    >>> listen(server, ControllerTokens(b"s"), "127.0.0.1:0").startswith("127.0.0.1:")
    True
    """
    port = security.bind(server, bind)
    if port == 0:
        raise OSError(f"{what} cannot listen on {bind}")
    return bound_address(bind, port)


__all__ = ["CONTROLLER", "Metadata", "Security", "listen"]
