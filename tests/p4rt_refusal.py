"""Whether a P4Runtime server refuses a client's credentials, without waiting out a
timeout (a shared test helper, importable as ``p4rt_refusal``: ``pythonpath = tests``).

A Capabilities RPC on a channel opened with the credentials (the controller's own
:func:`controller.p4rt.tls.open_channel`), not waiting for the channel to be ready, fails
with UNAVAILABLE as soon as the server refuses the handshake (milliseconds on the 2-core
machine); a server that accepts answers it. Only UNAVAILABLE counts as refused: an answer,
another error, or a channel still connecting at the bound is not a refusal. Before, the
tests waited out a 3 s ``SwitchConnection`` timeout per refusal and took any timeout as one.

Example::

    >>> from p4rt_refusal import refused                            # doctest: +SKIP
    >>> refused("127.0.0.1:9559", None)          # plaintext to a TLS switch  # doctest: +SKIP
    True
"""
from __future__ import annotations

from typing import Optional

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.p4rt.tls import ClientTls, open_channel

RPC_TIMEOUT_S = 30.0
"""Bound on the probe RPC (a refused handshake answers in milliseconds)."""


def refusal(addr: str, tls: Optional[ClientTls]) -> Optional[grpc.StatusCode]:
    """The status a Capabilities RPC to ``addr`` with ``tls`` (None: plaintext) fails
    with, or None when the server answers."""
    with open_channel(addr, tls) as channel:
        try:
            p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(
                p4runtime_pb2.CapabilitiesRequest(), timeout=RPC_TIMEOUT_S)
        except grpc.RpcError as exc:
            return exc.code()
    return None


def refused(addr: str, tls: Optional[ClientTls]) -> bool:
    """True when the server at ``addr`` refuses a client with ``tls``: UNAVAILABLE."""
    return refusal(addr, tls) == grpc.StatusCode.UNAVAILABLE
