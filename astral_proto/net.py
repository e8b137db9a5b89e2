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

import threading
from typing import Callable, Iterator, Optional

import grpc

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


PEER_TEXT_CHARS = 400
"""The most characters of a text another party of the agent protocol wrote (an agent's
refusal reason or error details, a move report's error) that the controller keeps, logs or
shows (:func:`peer_text`). GOR's own one-line agent errors (``controller.gor.orders.
call_error``) are under 200 characters; a host's agent could send 4 MB."""
MAX_AGENT_ADDRESS_CHARS = 256
"""The longest agent address or incarnation a registration may carry: a Unix socket path
is at most 108 bytes (``unix:`` and the path), an ``ip:port`` about 60; an incarnation is
32 hex digits (``uuid4().hex``)."""


def peer_text(text: str, limit: int = PEER_TEXT_CHARS) -> str:
    r"""``text`` another party wrote, made safe to store, log and print to a terminal: one
    line (whitespace folded), every character that is not printable (terminal escape
    sequences, control characters, bidirectional overrides) written as its Python escape,
    and at most ``limit`` characters (the rest cut, the original length said). A host's
    agent that refused an order with ``"\x1b]2;…\x07\x1b[2J"`` reached the operator's
    terminal raw through GOR's story and log (sec-audit5).

    >>> peer_text("refused:\x1b]2;owned\x07\x1b[2J\n  now \u202e")
    'refused:\\x1b]2;owned\\x07\\x1b[2J now \\u202e'
    >>> peer_text("a" * 1000, 10)
    'aaaaaaaaaa… (cut: 1000 characters)'
    """
    head = text[:4 * limit + 8]                 # bounded work whatever the text's size
    line = " ".join(head.split())
    safe = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in line)
    if len(safe) <= limit and len(head) == len(text):
        return safe
    return f"{safe[:limit]}… (cut: {len(text)} characters)"


REQUEST_WAIT_S = 2.0
"""The longest an agent-protocol server (GOR's registry, a host's agent) waits for a call's
request once the call holds a thread (:func:`first_request`). gRPC Python's synchronous
server gives a unary call its thread *before* the request has come and waits there
without bound, so a party that passed the handshake and sent only a call's headers held
a thread for good: 4 such calls held GOR's registry (a host's or a switch's certificate)
or a host's agent (the monitor's: the agents trust the control CA), sec-red2-s49. The
largest legitimate request (a 487,547-byte registration) crosses a Unix socket or a
management network in milliseconds."""


def first_request(requests: Iterator[bytes], cancel: Callable[[], None],
                  wait_s: float = REQUEST_WAIT_S) -> Optional[bytes]:
    """The first message of ``requests`` (a request-streaming call's iterator: the
    servers declare their unary methods so, to start before the request has come), or
    None when none came within ``wait_s`` (``cancel()``, the call's ``context.cancel``, is
    called then) or the client ended the call first. Messages after the first are not
    read (a unary client sends one and half-closes at once).

    >>> first_request(iter([b"req", b"more"]), cancel=lambda: None)
    b'req'
    >>> first_request(iter([]), cancel=lambda: None) is None
    True
    """
    timer = threading.Timer(wait_s, cancel)
    timer.daemon = True
    timer.start()
    try:
        return next(requests, None)
    except grpc.RpcError:                       # the client went, or the timer cancelled
        return None
    finally:
        timer.cancel()


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
