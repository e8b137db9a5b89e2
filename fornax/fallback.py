"""Software forwarding on the manager's CPU: :class:`SoftSwitch` does what the SmartNIC's
pipeline does, with the same decisions (:class:`fornax.nicview.NicView`) and the same
bytes (:mod:`fornax.softpath`); :class:`Fallback` runs it on the NIC's own interfaces
(AF_PACKET) while the hardware path hangs — the tenant's frames still arrive there, and
the VMs' connections go on.

The manager also uses :class:`SoftSwitch` for what the hardware sends it to forward: a
session, port or VPC pinned to software, a connection the full table could not take, a
trailing packet of a closed connection, traffic that is not TCP/UDP.

Example::

    >>> from fornax.nicview import NicView
    >>> from fornax.policy import EXAMPLE, parse_policy
    >>> view = NicView("nicA"); _ = view.load(parse_policy(EXAMPLE))
    >>> sw = SoftSwitch(view)
    >>> arp = bytes.fromhex("ffffffffffff0200000001010806000108000604000102000000010"
    ...                     "10a0000010000000000000a000002")
    >>> [(port, out[20:22].hex()) for port, out in sw.process(arp, 2)]
    [(2, '0002')]
"""
from __future__ import annotations

import logging
import select
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from fornax.nicview import NicView
from fornax.policy import Conn
from fornax.softpath import (ETHERTYPE_ARP, ETHERTYPE_IPV4, NextHop, Packet, Translation,
                             arp_reply, forward, parse_frame, session_key_of)
from p4src.smartnic.model import (NAT_HI, NAT_LO, NAT_NONE, UPLINK_PORT, VERDICT_ALLOW,
                                  SessionData, SessionKey)

log = logging.getLogger("fornax.fallback")

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOFT_IDLE_S = 30.0


@dataclass(slots=True)
class SoftSession:
    """A session the software path knows: its action data (no slot) and when it was last
    seen."""

    data: SessionData
    seen_s: float


class SoftSwitch:
    """The pipeline in software for NIC ``view.nic``; :meth:`process` one frame.

    Counters in :attr:`stats`: ``forwarded``, ``denied``, ``dropped`` (not a frame the NIC
    serves), ``arp``."""

    def __init__(self, view: NicView, idle_s: float = SOFT_IDLE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.view = view
        self.idle_s = idle_s
        self.clock = clock
        self.sessions: dict[bytes, SoftSession] = {}
        self.stats = {"forwarded": 0, "denied": 0, "dropped": 0, "arp": 0}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Forget every decision (a policy change)."""
        with self._lock:
            self.sessions.clear()

    def expire(self) -> int:
        """Drop sessions idle longer than ``idle_s``; how many."""
        now = self.clock()
        with self._lock:
            old = [k for k, s in self.sessions.items() if now - s.seen_s > self.idle_s]
            for k in old:
                del self.sessions[k]
        return len(old)

    def process(self, frame: bytes, in_port: int) -> list[tuple[int, bytes]]:
        """The frames ``frame`` (received on ``in_port``) becomes: [(port, frame)]."""
        view = self.view
        identity = view.identity
        assert identity is not None
        if in_port != UPLINK_PORT and in_port not in view.vm_ports:
            self.stats["dropped"] += 1
            return []
        pkt = parse_frame(frame, in_port)
        if pkt is None:
            self.stats["dropped"] += 1
            return []
        if in_port == UPLINK_PORT:
            vni = pkt.vni
            if vni is None or vni not in view.vpcs or \
                    int.from_bytes(frame[30:34], "big") != identity.vtep_ip:
                self.stats["dropped"] += 1
                return []
        else:
            vni = view.vm_ports[in_port]
            if pkt.ethertype == ETHERTYPE_ARP:
                reply = arp_reply(frame, identity.vm_gw_mac)
                self.stats["arp" if reply else "dropped"] += 1
                return [(in_port, reply)] if reply else []
        if pkt.ethertype != ETHERTYPE_IPV4 or not pkt.ip_off:
            self.stats["dropped"] += 1
            return []
        out = self._ip(pkt, vni)
        self.stats["forwarded" if out else "denied"] += 1
        return out

    def _ip(self, pkt: Packet, vni: int) -> list[tuple[int, bytes]]:
        view = self.view
        in_vm = None if pkt.in_port == UPLINK_PORT else view.vm_on_port(pkt.in_port)
        if not pkt.l4:
            conn = Conn(vni, pkt.proto, pkt.src_ip, 0, pkt.dst_ip, 0)
            d = view.decide(conn, in_vm)
            if not d.allowed and pkt.icmp_type == 0:     # an echo reply: the request's way
                d = view.decide(conn, in_vm, tcp_flags=0)
            if not d.allowed or d.dst_vm is None:
                return []
            hop = view.nexthops.get(view.nh_of_vm[d.dst_vm])
            return [forward(pkt, vni, hop, view.identity)] if hop else []  # type: ignore[arg-type]
        conn, from_backend = view.conn_of(pkt, vni)
        key, direction = session_key_of(pkt, vni, (conn.src_ip, conn.src_port)
                                        if from_backend else None)
        packed = key.packed()
        now = self.clock()
        with self._lock:
            sess = self.sessions.get(packed)
        if sess is None:
            flags = pkt.tcp_flags if pkt.proto == 6 else -1
            decision = view.decide(conn, in_vm, flags)
            data = view.build(key, direction, conn, decision, from_backend).data
            sess = SoftSession(data, now)
            with self._lock:
                self.sessions[packed] = sess
        sess.seen_s = now
        return self.forward_with(pkt, vni, key, direction, sess.data, from_backend is not None)

    def forward_with(self, pkt: Packet, vni: int, key: SessionKey, direction: int,
                     data: SessionData, from_backend: bool) -> list[tuple[int, bytes]]:
        """Forward ``pkt`` as session entry ``data`` says (the pipeline's forward.p4)."""
        if data.verdict != VERDICT_ALLOW:
            return []
        hop: Optional[NextHop] = self.view.nexthops.get(data.nh_hi if direction == 0
                                                        else data.nh_lo)
        if hop is None:
            return []
        nat = None
        if data.nat_side != NAT_NONE:
            if from_backend:
                vip = (key.ip_lo, key.port_lo) if direction == 0 else (key.ip_hi, key.port_hi)
                nat = Translation("src", *vip)
            elif (direction == 0 and data.nat_side == NAT_HI) or \
                    (direction == 1 and data.nat_side == NAT_LO):
                nat = Translation("dst", data.nat_ip, data.nat_port)
        assert self.view.identity is not None
        return [forward(pkt, vni, hop, self.view.identity, nat, key)]


class Fallback:
    """Forward with :class:`SoftSwitch` on the NIC's interfaces (``interfaces``: port ->
    Linux interface of the switch's side) while the hardware path is hung; start and stop
    it as heartbeats stop and come back. Frames the interfaces transmit (the switch's own,
    or ours) are skipped."""

    def __init__(self, soft: SoftSwitch, interfaces: Mapping[int, str]) -> None:
        self.soft = soft
        self.interfaces = dict(interfaces)
        self._socks: dict[int, socket.socket] = {}
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.frames_in = 0
        self.frames_out = 0

    @property
    def running(self) -> bool:
        """True while it forwards."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Open a raw socket per interface and forward until :meth:`stop`."""
        if self.running or not self.interfaces:
            return
        for port, iface in self.interfaces.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((iface, 0))
            s.setblocking(False)
            self._socks[port] = s
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="fornax-fallback", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop forwarding and close the sockets."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
            self._thread = None
        for s in self._socks.values():
            s.close()
        self._socks = {}

    def _run(self) -> None:
        by_fd = {s.fileno(): (port, s) for port, s in self._socks.items()}
        while not self._stop.is_set():
            ready, _, _ = select.select(list(by_fd), [], [], 0.05)
            for fd in ready:
                port, sock = by_fd[fd]
                for _ in range(64):
                    try:
                        frame, addr = sock.recvfrom(65535)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    if addr[2] == PACKET_OUTGOING:
                        continue
                    self.frames_in += 1
                    try:
                        outs = self.soft.process(frame, port)
                    except Exception:                  # noqa: BLE001 - one frame only
                        log.exception("software path: a frame failed")
                        continue
                    for out_port, out in outs:
                        target = self._socks.get(out_port)
                        if target is not None:
                            try:
                                target.send(out)
                                self.frames_out += 1
                            except OSError:
                                pass


__all__ = ["Fallback", "SoftSession", "SoftSwitch"]
