"""The agent's checks on a move order before it moves anything: :class:`OrderGuard`.

An order (``astral_proto.agent_pb2.MoveOrder``) is single-use, short-lived and bound to
one host and one flow. The guard refuses, with :class:`OrderRefused` (a gRPC status and a
reason the agent logs and returns):

============================  ===================  =====================================
refusal                       status               reason starts with
============================  ===================  =====================================
nonce, target, flow or expiry INVALID_ARGUMENT     ``malformed order``
missing; expiry too far ahead
addressed to another host     PERMISSION_DENIED    ``order addressed to``
past its expiry               FAILED_PRECONDITION  ``order expired``
a flow this host does not     NOT_FOUND            ``host ... sends no flow``
send (e.g. another host's)
the 5-tuple is not that       PERMISSION_DENIED    ``order's flow``
flow's (another host's flow)
a nonce already used          ALREADY_EXISTS       ``order replayed``
============================  ===================  =====================================

**Expiry** is absolute wall-clock time (``expires_unix_ms``, GOR's send time plus its call
timeout), not a time-to-live counted from reception: a captured order replayed later is
dead whenever it arrives, and the agent need remember a nonce only until the order's
expiry. GOR's and the hosts' clocks must agree within ``max_clock_skew_s`` (one machine on
the testbed; NTP in a fabric). The checks run in the order of the table, so an expired
replay is reported as expired; a nonce is recorded only when every other check passed.

>>> from astral_proto import agent_pb2
>>> from astral_proto.flows import HostFlow
>>> flow = HostFlow("f1", "10.0.0.1", "10.1.0.1", 49152, 7)
>>> guard = OrderGuard("b0s0", wall_clock=lambda: 1000.0)
>>> order = agent_pb2.MoveOrder(flow_id="f1", new_sport=50000, order_id="o1", nonce="n" * 32,
...                             target_host="b0s0", flow=flow.to_proto().tuple,
...                             expires_unix_ms=1_002_000)
>>> guard.check(order, flow)
>>> try:
...     guard.check(order, flow)
... except OrderRefused as refused:
...     print(refused.code.name, refused)
ALREADY_EXISTS order replayed: nonce nnnnnnnnnnnnnnnn... of order o1 was already used
"""
from __future__ import annotations

import heapq
import threading
import time
from typing import Callable, Optional

import grpc

from astral_proto import agent_pb2
from astral_proto.flows import IPPROTO_UDP, HostFlow

NONCE_MIN_CHARS = 16
"""A nonce has at least this many characters (GOR sends 32 hex digits: 128 bits)."""


class OrderRefused(Exception):
    """A move order the agent will not apply: ``code`` (a ``grpc.StatusCode``) and why."""

    def __init__(self, code: grpc.StatusCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class OrderGuard:
    """Checks orders addressed to ``host`` and remembers their nonces until they expire
    (thread-safe). ``max_order_ttl_s``: how far ahead an expiry may lie (the nonce memory
    is bounded by it); ``max_nonces``: more unexpired nonces than this and new orders are
    refused (``RESOURCE_EXHAUSTED``) rather than memory grown without bound."""

    def __init__(self, host: str, *, wall_clock: Callable[[], float] = time.time,
                 max_clock_skew_s: float = 1.0, max_order_ttl_s: float = 60.0,
                 max_nonces: int = 65536) -> None:
        self.host = host
        self.wall_clock = wall_clock
        self.max_clock_skew_s = max_clock_skew_s
        self.max_order_ttl_s = max_order_ttl_s
        self.max_nonces = max_nonces
        self.refused = 0
        self._nonces: dict[str, float] = {}          # nonce → wall time it may be forgotten
        self._expiries: list[tuple[float, str]] = []  # heap of (forget at, nonce)
        self._lock = threading.Lock()

    def check(self, order: agent_pb2.MoveOrder, flow: Optional[HostFlow]) -> None:
        """Accept ``order`` (its nonce is now used) or raise :class:`OrderRefused`.
        ``flow``: this host's flow named by ``order.flow_id`` (None if it sends none)."""
        try:
            self._check(order, flow)
        except OrderRefused:
            with self._lock:
                self.refused += 1
            raise

    def _check(self, order: agent_pb2.MoveOrder, flow: Optional[HostFlow]) -> None:
        missing = [name for name, ok in (("nonce", len(order.nonce) >= NONCE_MIN_CHARS),
                                         ("target_host", bool(order.target_host)),
                                         ("flow", order.HasField("flow")),
                                         ("expires_unix_ms", order.expires_unix_ms > 0)) if not ok]
        if missing:
            raise OrderRefused(grpc.StatusCode.INVALID_ARGUMENT,
                               f"malformed order: {', '.join(missing)} missing or too short")
        if order.target_host != self.host:
            raise OrderRefused(grpc.StatusCode.PERMISSION_DENIED,
                               f"order addressed to {order.target_host!r}, this agent is {self.host!r}")
        now = self.wall_clock()
        expires = order.expires_unix_ms / 1000.0
        if now > expires + self.max_clock_skew_s:
            raise OrderRefused(grpc.StatusCode.FAILED_PRECONDITION,
                               f"order expired {now - expires:.3f} s ago")
        if expires > now + self.max_order_ttl_s + self.max_clock_skew_s:
            raise OrderRefused(grpc.StatusCode.INVALID_ARGUMENT,
                               f"malformed order: expiry {expires - now:.1f} s ahead "
                               f"(at most {self.max_order_ttl_s:g} s)")
        if flow is None:
            raise OrderRefused(grpc.StatusCode.NOT_FOUND,
                               f"host {self.host} sends no flow {order.flow_id!r}")
        t = order.flow
        if (t.src_ip, t.dst_ip, t.dst_port, t.protocol) != (flow.src_ip, flow.dst_ip, flow.dst_port,
                                                            IPPROTO_UDP):
            raise OrderRefused(grpc.StatusCode.PERMISSION_DENIED,
                               f"order's flow {t.src_ip}>{t.dst_ip}:{t.dst_port}/{t.protocol} is not "
                               f"flow {flow.flow_id} of host {self.host}")
        self._use_nonce(order, now, expires + self.max_clock_skew_s)

    def _use_nonce(self, order: agent_pb2.MoveOrder, now: float, forget_at: float) -> None:
        with self._lock:
            while self._expiries and self._expiries[0][0] < now:
                _, old = heapq.heappop(self._expiries)
                self._nonces.pop(old, None)
            if order.nonce in self._nonces:
                raise OrderRefused(grpc.StatusCode.ALREADY_EXISTS,
                                   f"order replayed: nonce {order.nonce[:16]}... of order "
                                   f"{order.order_id} was already used")
            if len(self._nonces) >= self.max_nonces:
                raise OrderRefused(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   f"{len(self._nonces)} unexpired orders remembered; try later")
            self._nonces[order.nonce] = forget_at
            heapq.heappush(self._expiries, (forget_at, order.nonce))

    def remembered(self) -> int:
        """How many nonces are remembered now (those not yet forgotten)."""
        with self._lock:
            return len(self._nonces)


__all__ = ["NONCE_MIN_CHARS", "OrderGuard", "OrderRefused"]
