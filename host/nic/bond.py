"""A dual-port NIC: two ports, one RDMA device — each QP's tx port, link monitoring, failover.

The Astral paper homes each NIC's two ports on two leaves of its rail; the ports are
bonded (one address, one MAC) and each QP sends on one of them. This module is that
bond, in three parts, each small enough to test alone:

* **Tx-port affinity** (:func:`l34_hash`, :class:`TxAffinity`, in :mod:`host.nic.affinity`,
  where the hash and its sources are written): each QP is bound to one port by the
  bonding driver's layer3+4 hash, round robin, or explicitly.
* **Link monitoring** (:class:`LinkMonitor`), as a bond's ``miimon``: every
  ``miimon_s`` (default :data:`MIIMON_S` = 100 ms, the bonding driver's
  ``BOND_DEFAULT_MIIMON``) the carrier of each port is read; a port whose carrier has
  been off for ``downdelay_s`` (default 0, the driver's) is declared down, on for
  ``updelay_s`` up again. A port failure is therefore noticed within ``miimon_s +
  downdelay_s`` of the carrier loss (plus, here, until the NIC's loop next runs: it runs
  at least once per frame time while a QP sends).
* **Failover** (:class:`BondedIO`): a QP keeps its port (its *logical* affinity); while
  that port is down its frames leave on the surviving port, and go back when the port
  is up again — mlx5's LAG remaps a dead port's tx affinity to the live port the same
  way (``mlx5_infer_tx_affinity_mapping``, drivers/net/ethernet/mellanox/mlx5/core/lag),
  and for two ports it is what balance-xor's ``hash % live slaves`` gives too. Frames
  that are not IPv4 (a PFC PAUSE of a stalled receiver) go out of every live port.

:class:`BondedIO` is a :class:`host.nic.io.FrameIO`: a :class:`~host.nic.io.NicPort`
runs the two ports as one device unchanged (one PFC state for the NIC: a PAUSE received
on either port holds that priority on both — a simplification, a real NIC pauses only
the port it arrived on). Each port may have its own next-hop MAC (``gateway_macs``: the
two leaves are two routers); the frame's destination MAC is rewritten to the port's.

>>> src, dst = "10.0.0.1", "10.1.0.1"
>>> [TxAffinity().port_of(FlowKey.of(src, dst, sport, 4791)) for sport in range(49152, 49160)]
[0, 0, 1, 1, 0, 0, 1, 1]
"""
from __future__ import annotations

import fcntl
import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from host.nic.affinity import TX_POLICIES, FlowKey, TxAffinity, l34_hash
from host.nic.io import FrameIO

MIIMON_S = 0.1
"""Link-monitoring interval: the bonding driver's ``BOND_DEFAULT_MIIMON`` (100 ms)."""


SIOCGIFFLAGS = 0x8913
IFF_UP, IFF_RUNNING = 0x1, 0x40


def link_carrier(iface: str) -> Callable[[], bool]:
    """A carrier reader for ``iface`` in the caller's network namespace: the interface is
    up and ``IFF_RUNNING`` (the kernel sets it while the carrier is on: what a bond's
    miimon reads as ``netif_carrier_ok``), from ``SIOCGIFFLAGS`` on a datagram socket —
    not sysfs, whose view is the namespace it was mounted in. An interface that is gone
    reads as no carrier.

    >>> link_carrier("lo")()
    True
    >>> link_carrier("no-such-if0")()
    False
    """
    name = iface.encode()[:15]

    def carrier() -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                raw = fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, struct.pack("16sH14x", name, 0))
            except OSError:
                return False
        flags = struct.unpack_from("16sH", raw)[1]
        return bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)
    return carrier


@dataclass(slots=True)
class LinkMonitor:
    """A bond's ``miimon``: the ports' carriers read every ``miimon_s``; a change that
    lasts ``downdelay_s`` / ``updelay_s`` flips the port's state (module docstring).

    >>> state = {"c": True}
    >>> m = LinkMonitor([lambda: True, lambda: state["c"]], miimon_s=0.1)
    >>> m.poll(0.0), m.up
    (False, [True, True])
    >>> state["c"] = False; m.poll(0.05), m.poll(0.1), m.up
    (False, True, [True, False])
    >>> m.events
    [(0.1, 1, 'down')]
    """

    carriers: Sequence[Callable[[], bool]]
    miimon_s: float = MIIMON_S
    downdelay_s: float = 0.0
    updelay_s: float = 0.0
    up: list[bool] = field(default_factory=list)
    events: list[tuple[float, int, str]] = field(default_factory=list)
    _next: Optional[float] = None
    _ticks: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.miimon_s <= 0:
            raise ValueError(f"miimon {self.miimon_s * 1000:g} ms: must be above 0")
        if self.downdelay_s < 0 or self.updelay_s < 0:
            raise ValueError("downdelay/updelay: must not be negative")
        self.up = [True] * len(self.carriers)
        self._ticks = [0] * len(self.carriers)

    def _delay_ticks(self, carrier: bool) -> int:
        """The delay in miimon ticks (the driver keeps it as a multiple of miimon)."""
        return round((self.updelay_s if carrier else self.downdelay_s) / self.miimon_s)

    def poll(self, now: float) -> bool:
        """Read the carriers when a ``miimon`` tick is due at ``now``; True when a port's
        state changed. A changed carrier flips the port at the tick it is first seen (no
        delay) or that many ticks later, as the driver counts its delays."""
        if self._next is not None and now < self._next - 1e-9:    # (float steps)
            return False
        self._next = now + self.miimon_s
        changed = False
        for i, read in enumerate(self.carriers):
            carrier = read()
            if carrier == self.up[i]:
                self._ticks[i] = 0
                continue
            self._ticks[i] += 1
            if self._ticks[i] > self._delay_ticks(carrier):
                self.up[i], self._ticks[i], changed = carrier, 0, True
                self.events.append((now, i, "up" if carrier else "down"))
        return changed


class BondedIO:
    """Two (or more) port links as one :class:`~host.nic.io.FrameIO` (module docstring).

    >>> import socket
    >>> from host.nic.io import DatagramIO
    >>> pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(2)]
    >>> carrier = [True, True]
    >>> mon = LinkMonitor([lambda: carrier[0], lambda: carrier[1]], miimon_s=0.1)
    >>> bond = BondedIO([DatagramIO(a) for a, _ in pairs], TxAffinity(), mon,
    ...                 clock=lambda: clock[0])
    >>> clock = [0.0]
    >>> key = FlowKey.of("10.0.0.1", "10.1.0.1", 49154)        # hashed to port 1
    >>> frame = (bytes(12) + b"\\x08\\x00\\x45" + bytes(8) + b"\\x11" + bytes(2) + key.src_ip
    ...          + key.dst_ip + struct.pack("!HH", key.sport, key.dport))
    >>> bond.send(frame), bond.tx_frames
    (True, [0, 1])
    >>> carrier[1] = False; clock[0] = 0.1; bond.send(frame), bond.tx_frames, bond.moves
    (True, [1, 1], 1)
    >>> bond.report()["qps"]
    [{'flow': '10.0.0.1:49154->10.1.0.1:4791', 'affinity': 1, 'port': 0}]
    >>> bond.close()
    """

    def __init__(self, links: Sequence[FrameIO], affinity: TxAffinity, monitor: LinkMonitor,
                 gateway_macs: Sequence[Optional[bytes]] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        if len(links) != affinity.ports or len(monitor.carriers) != len(links):
            raise ValueError(f"{len(links)} links, {affinity.ports} affinity ports and "
                             f"{len(monitor.carriers)} carriers: all must agree")
        self.links = list(links)
        self.affinity = affinity
        self.monitor = monitor
        self.gateway_macs = list(gateway_macs) or [None] * len(links)
        self.clock = clock
        self.tx_frames = [0] * len(links)
        self.rx_frames = [0] * len(links)
        self.tx_no_port = 0            # frames with no live port to leave on
        self.moves = 0                 # QPs sent on another port than before
        self.qp_port: dict[FlowKey, int] = {}
        self.first_move_at: Optional[float] = None
        self._rx_next = 0
        self._epoll = select.epoll()
        for link in self.links:
            self._epoll.register(link.fileno(), select.EPOLLIN)

    def _watch(self) -> None:
        self.monitor.poll(self.clock())

    def live_port(self, logical: int) -> Optional[int]:
        """The port a QP bound to ``logical`` sends on now: its own while up, else the
        first live one (None when every port is down)."""
        up = self.monitor.up
        if up[logical]:
            return logical
        return next((i for i, ok in enumerate(up) if ok), None)

    def forget(self, key: FlowKey) -> None:
        """Forget the 5-tuple ``key`` a QP left for good (its pin and the port it last
        sent on): the per-QP tables then hold the 5-tuples in use, not every one a QP
        ever had (:meth:`host.agent.mover.QPMover.move` calls it)."""
        self.affinity.forget(key)
        self.qp_port.pop(key, None)

    def _send_on(self, port: int, frame: bytes) -> bool:
        mac = self.gateway_macs[port]
        if mac is not None:
            frame = mac + frame[6:]
        try:
            ok = self.links[port].send(frame)
        except OSError:                    # the port's interface is gone (a dead link)
            ok = False
        if ok:
            self.tx_frames[port] += 1
        return ok

    def send(self, frame: bytes) -> bool:
        """Send on the QP's port (or the surviving one); non-IPv4 frames on every live port."""
        self._watch()
        key = FlowKey.from_frame(frame)
        if key is None:
            sent = [self._send_on(i, frame) for i, ok in enumerate(self.monitor.up) if ok]
            return any(sent)
        port = self.live_port(self.affinity.port_of(key))
        if port is None:
            self.tx_no_port += 1
            return False
        before = self.qp_port.get(key)
        if before is not None and before != port:
            self.moves += 1
            if self.first_move_at is None:
                self.first_move_at = self.clock()
        self.qp_port[key] = port
        return self._send_on(port, frame)

    def recv(self) -> Optional[bytes]:
        """One frame from whichever port has one (ports taken in turn)."""
        self._watch()
        n = len(self.links)
        for i in range(n):
            port = (self._rx_next + i) % n
            try:
                frame = self.links[port].recv()
            except OSError:
                frame = None
            if frame is not None:
                self.rx_frames[port] += 1
                self._rx_next = (port + 1) % n
                return frame
        return None

    def fileno(self) -> int:
        """An epoll descriptor readable when any port has a frame."""
        return self._epoll.fileno()

    def close(self) -> None:
        """Close every port and the epoll descriptor."""
        for link in self.links:
            link.close()
        self._epoll.close()

    def report(self) -> dict[str, object]:
        """The bond's part of the NIC report: ports' state and counters, link events,
        every QP's affinity and the port it last sent on."""
        return {
            "policy": self.affinity.policy, "miimon_ms": self.monitor.miimon_s * 1000,
            "downdelay_ms": self.monitor.downdelay_s * 1000,
            "up": list(self.monitor.up), "tx_frames": list(self.tx_frames),
            "rx_frames": list(self.rx_frames), "tx_no_port": self.tx_no_port,
            "moves": self.moves, "first_move_at": self.first_move_at,
            "events": [{"t": t, "port": p, "state": s} for t, p, s in self.monitor.events],
            "qps": [{"flow": str(k), "affinity": self.affinity.port_of(k), "port": p}
                    for k, p in sorted(self.qp_port.items(), key=lambda kv: str(kv[0]))],
        }


def parse_lag_ports(text: str, count: int, ports: int = 2) -> list[Optional[int]]:
    """``--lag-port``: one entry per QP, a port number or ``-`` (the policy's choice).

    >>> parse_lag_ports("1,-,0", 3)
    [1, None, 0]
    >>> parse_lag_ports("2", 1)
    Traceback (most recent call last):
    ValueError: --lag-port: port 2 (the NIC has ports 0..1)
    """
    if not text:
        return [None] * count
    items = [s.strip() for s in text.split(",")]
    if len(items) != count:
        raise ValueError(f"--lag-port: {len(items)} entries for {count} QPs (one per --sport)")
    out: list[Optional[int]] = []
    for item in items:
        if item == "-":
            out.append(None)
            continue
        if not item.isdigit() or not 0 <= int(item) < ports:
            raise ValueError(f"--lag-port: port {item} (the NIC has ports 0..{ports - 1})")
        out.append(int(item))
    return out


__all__ = ["BondedIO", "FlowKey", "LinkMonitor", "MIIMON_S", "TX_POLICIES", "TxAffinity",
           "l34_hash", "link_carrier", "parse_lag_ports"]
