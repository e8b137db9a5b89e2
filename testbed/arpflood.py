"""An ARP flood from a compromised host on a live fabric: the frames a leaf punts to its
controller (the attack row ``host-floods-arp-punts`` of
:func:`testbed.attacks.live_fabric_attacks`).

``p4src/include/control/arp.p4`` answers an ARP request for a gateway or a neighbour in
the data plane and sends every other ARP packet (a miss, any reply, a gratuitous ARP) to
the CPU port as a PacketIn (reason ``PUNT_ARP``). The attacker is a testbed host: from a
packet socket on its rail-0 NIC, in its namespace, it sends ``frames`` gratuitous ARP
replies (its own MAC and address, broadcast; what a host announcing itself sends, so
nothing tells them from legitimate ones but their rate) as fast as Python sends. Every
one is a punt. :func:`count_punts` then counts the PacketIns the controller's connection
to the attacker's leaf received from the attacker's port: it stops when none arrived for
``quiet_s`` (the switch's backlog has drained) or at a bounded timeout. No fixed wait.
:func:`punt_flood` does both and reads what the leaf's policer
(``FabricIngress.arp.punt_meter``, ``controller.fabric.puntguard``) allows on that port
and what it dropped (``FabricIngress.arp.punt_drops``).

Before the policer, sec-punt-s46 measured on p4sim (b1s1, 500,000 frames in 3.2 s):
every frame the switch read became a PacketIn (49,201), the last 8.9 s after the flood
ended (bench/README.md, ``security.punt_flood``).

Example (root, a testbed up)::

    >>> got = punt_flood(shells, tb.fabric, tb.programmer.connection("b1r0l0"), "b1s1")  # doctest: +SKIP
    >>> got.within_policer(), got.punts.packet_ins                                      # doctest: +SKIP
    (True, 131)
"""
from __future__ import annotations

import queue
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from controller.fabric.puntguard import ARP_PUNT_DROPS_COUNTER, ARP_PUNT_METER

FLOOD_FRAMES = 20000
"""Gratuitous ARP replies one flood sends (about 0.2-0.5 s of Python at full speed)."""
FLOOD_TIMEOUT_S = 60.0
"""Bound on one flood's sender."""
PUNT_QUIET_S = 1.0
"""A PacketIn count is final once no PacketIn from the port arrived for this long."""
PUNT_TIMEOUT_S = 60.0
"""Bound on counting the PacketIns of one flood."""

_FLOOD = r'''
import socket, struct, sys, time
intf, mac, ip, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", "")), socket.inet_aton(sys.argv[3]), int(sys.argv[4])
arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 2, mac, ip, b"\xff" * 6, ip)
frame = b"\xff" * 6 + mac + b"\x08\x06" + arp + bytes(18)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((intf, 0))
t0 = time.monotonic()
sent = 0
for _ in range(n):
    try:
        s.send(frame)
        sent += 1
    except (BlockingIOError, OSError):
        pass
print(sent, round(time.monotonic() - t0, 4), flush=True)
'''


@dataclass(frozen=True, slots=True)
class FloodSent:
    """What one flood sent.

    >>> print(FloodSent("b1s1", 20000, 0.25))
    b1s1 sent 20000 gratuitous ARP replies in 0.25 s (80000 pps)
    """

    attacker: str
    frames: int
    seconds: float

    def __str__(self) -> str:
        pps = self.frames / self.seconds if self.seconds > 0 else 0.0
        return (f"{self.attacker} sent {self.frames} gratuitous ARP replies in "
                f"{self.seconds:.2f} s ({pps:.0f} pps)")


@dataclass(frozen=True, slots=True)
class PuntCount:
    """The PacketIns one port's flood gave the controller, and over how long they came.

    >>> print(PuntCount(2, 80, 0, 1.2))
    80 PacketIns from port 2 (0 from other ports) over 1.20 s
    """

    port: int
    packet_ins: int
    other_packet_ins: int
    seconds: float

    def __str__(self) -> str:
        return (f"{self.packet_ins} PacketIns from port {self.port} "
                f"({self.other_packet_ins} from other ports) over {self.seconds:.2f} s")


def flood_arp(shells: Mapping[str, int], fabric: Any, attacker: str,
              frames: int = FLOOD_FRAMES, timeout_s: float = FLOOD_TIMEOUT_S) -> FloodSent:
    """``attacker`` sends ``frames`` gratuitous ARP replies on its rail-0 NIC (module
    docstring). Needs root and the host's shell (``mnexec``); raises ``RuntimeError`` when
    the sender fails."""
    if frames <= 0:
        raise ValueError(f"frames: {frames} (must be > 0)")
    nic = fabric.host(attacker).nics[0]
    done = subprocess.run(["mnexec", "-a", str(shells[attacker]), sys.executable, "-c", _FLOOD,
                           nic.intf, nic.mac, nic.ip, str(frames)],
                          capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"the ARP flood from {attacker} failed: {done.stderr.strip()[-300:]}")
    sent, seconds = done.stdout.split()
    return FloodSent(attacker, int(sent), float(seconds))


def drain_packet_ins(conn: Any) -> int:
    """Empties ``conn``'s PacketIn queue (what arrived before a measurement); how many."""
    n = 0
    while True:
        try:
            conn.packets.get_nowait()
        except queue.Empty:
            return n
        n += 1


def count_punts(conn: Any, port: int, quiet_s: float = PUNT_QUIET_S,
                timeout_s: float = PUNT_TIMEOUT_S) -> PuntCount:
    """The PacketIns ``conn`` (a ``controller.p4rt.SwitchConnection``) receives with
    ``ingress_port == port``, until none came for ``quiet_s`` or ``timeout_s`` passed."""
    start = last = time.monotonic()
    mine = others = 0
    while time.monotonic() - start < timeout_s:
        pkt = conn.get_packet_in(timeout_s=quiet_s)
        if pkt is None:
            break
        last = time.monotonic()
        if pkt.metadata.get("ingress_port") == port:
            mine += 1
        else:
            others += 1
    return PuntCount(port, mine, others, last - start)


@dataclass(frozen=True, slots=True)
class PuntFlood:
    """One flood and what the controller got from it: ``sent``, ``punts``, the port's
    policer as the switch holds it (``(cir, cburst)`` in packets/s and packets; None: the
    cell is unconfigured, nothing is policed), the punts the policer dropped, and
    ``window_s`` (from the first frame sent to the last PacketIn).

    >>> f = PuntFlood(FloodSent("b1s1", 20000, 0.2), PuntCount(2, 130, 0, 0.3), (100, 100), 9000, 0.5)
    >>> f.allowed(), f.within_policer()
    (151, True)
    >>> print(f)
    130 of 20000 ARP frames reached the controller as PacketIns (policer 100/s, burst 100: at most 151 in 0.50 s; 9000 dropped by it)
    """

    sent: FloodSent
    punts: PuntCount
    policer: Optional[tuple[int, int]]
    policed_drops: int
    window_s: float

    def allowed(self) -> Optional[int]:
        """The most PacketIns the policer lets through in the window (burst + rate × window,
        +1 for the token being earned); None without a policer."""
        if self.policer is None:
            return None
        cir, cburst = self.policer
        return cburst + int(cir * self.window_s) + 1

    def within_policer(self) -> bool:
        """Whether the controller got no more than the policer allows (False without one)."""
        bound = self.allowed()
        return bound is not None and self.punts.packet_ins <= bound

    def __str__(self) -> str:
        head = (f"{self.punts.packet_ins} of {self.sent.frames} ARP frames reached the controller "
                f"as PacketIns")
        if self.policer is None:
            return f"{head} (no policer on port {self.punts.port}; last {self.window_s:.2f} s after the first frame)"
        return (f"{head} (policer {self.policer[0]}/s, burst {self.policer[1]}: at most "
                f"{self.allowed()} in {self.window_s:.2f} s; {self.policed_drops} dropped by it)")


def port_policer(conn: Any, port: int) -> Optional[tuple[int, int]]:
    """``(cir, cburst)`` of ``arp.punt_meter[port]`` as the switch holds it (None when the
    cell is unconfigured)."""
    for e in conn.read(conn.meter_entry(ARP_PUNT_METER, port)):
        if e.meter_entry.HasField("config"):
            return int(e.meter_entry.config.cir), int(e.meter_entry.config.cburst)
    return None


def punt_flood(shells: Mapping[str, int], fabric: Any, conn: Any, attacker: str,
               frames: int = FLOOD_FRAMES) -> PuntFlood:
    """:func:`flood_arp` from ``attacker`` and :func:`count_punts` on ``conn`` (the
    controller's connection to the attacker's leaf), with the port's policer and its drops
    read from the switch before and after."""
    port = fabric.host(attacker).nics[0].leaf_port
    policer = port_policer(conn, port)
    drops0 = conn.read_counter(ARP_PUNT_DROPS_COUNTER, port)[port].packets
    drain_packet_ins(conn)
    start = time.monotonic()
    sent = flood_arp(shells, fabric, attacker, frames)
    counting = time.monotonic()
    punts = count_punts(conn, port)
    window = counting - start + punts.seconds       # the first frame sent → the last PacketIn
    drops = conn.read_counter(ARP_PUNT_DROPS_COUNTER, port)[port].packets - drops0
    return PuntFlood(sent, punts, policer, drops, window)


__all__ = ["FLOOD_FRAMES", "FLOOD_TIMEOUT_S", "FloodSent", "PUNT_QUIET_S", "PUNT_TIMEOUT_S",
           "PuntCount", "PuntFlood", "count_punts", "drain_packet_ins", "flood_arp",
           "port_policer", "punt_flood"]
