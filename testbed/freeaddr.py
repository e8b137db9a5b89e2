"""Datagrams to an address nobody holds, on a live fabric: how many frames they make on
the fabric's links (the attack row ``host-loops-free-address`` of
:func:`testbed.attacks.live_fabric_attacks`).

The attacker is a testbed host. From a UDP socket in its namespace it sends ``frames``
datagrams to a free address of its own subnet (its kernel sends them to the gateway, as
to any neighbour). A leaf used to route only its NICs' ``/32``s and the rest of
``10.0.0.0/8`` up; the spine routed the subnet back down: each datagram went round until
its TTL ran out. :func:`free_address_flood` counts the frames every switch-to-switch port
sent meanwhile (``FabricEgress.telemetry.tx`` over the controller's connections, read
until two reads agree: bounded, no fixed wait). Before the leaves' subnet drop routes
(``controller.fabric.plan``; sec-red-s47, p4sim testbed) 100 datagrams from b1s1 to
10.1.0.77 made 6,482 frames on the fabric's links (3,200 up, 3,282 down: TTL 64); now 0.

Example (root, a testbed up)::

    >>> got = free_address_flood(shells, tb.fabric, tb.programmer.connections, "b1s1")  # doctest: +SKIP
    >>> got.link_frames                                                                 # doctest: +SKIP
    0
"""
from __future__ import annotations

import ipaddress
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from testbed.traffic.probe import poll_until

FREE_FRAMES = 100
"""Datagrams one run sends."""
SETTLE_TIMEOUT_S = 10.0
"""Bound on waiting for the links' counters to stop changing."""
TX_COUNTER = "FabricEgress.telemetry.tx"

_SEND = r'''
import socket, sys
dst, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(n):
    s.sendto(b"astral-free-address" + bytes(81), (dst, 9997))
print(n, flush=True)
'''


@dataclass(frozen=True, slots=True)
class FreeAddressFlood:
    """What one run sent and the frames the fabric's switch-to-switch ports sent meanwhile.

    >>> print(FreeAddressFlood("b1s1", "10.1.0.77", 100, 6482, True))
    b1s1 sent 100 datagrams to 10.1.0.77 (no NIC's): the fabric's links carried 6482 frames meanwhile (64.8 per datagram)
    """

    attacker: str
    address: str
    frames: int
    link_frames: int
    settled: bool

    def __str__(self) -> str:
        tail = "" if self.settled else " (still changing at the bound)"
        return (f"{self.attacker} sent {self.frames} datagrams to {self.address} (no NIC's): the "
                f"fabric's links carried {self.link_frames} frames meanwhile "
                f"({self.link_frames / max(1, self.frames):.1f} per datagram){tail}")


def free_address(fabric: Any, host: str) -> str:
    """The first address of ``host``'s rail-0 subnet that is neither a NIC's nor the
    gateway's."""
    nic = fabric.host(host).nics[0]
    taken = {n.ip for h in fabric.hosts for n in h.nics} | {nic.gateway_ip}
    net = ipaddress.IPv4Network(f"{nic.ip}/{nic.prefix_len}", strict=False)
    return next(str(a) for a in net.hosts() if str(a) not in taken)


def _link_tx(fabric: Any, connections: Mapping[str, Any]) -> int:
    names = {s.name for s in fabric.switches}
    total = 0
    for sw in fabric.switches:
        links = {p for p, info in sw.ports.items() if info.peer_node in names}
        cells = connections[sw.name].read_counter(TX_COUNTER)
        total += sum(c.packets for p, c in cells.items() if p in links)
    return total


def free_address_flood(shells: Mapping[str, int], fabric: Any, connections: Mapping[str, Any],
                       attacker: str, frames: int = FREE_FRAMES,
                       settle_timeout_s: float = SETTLE_TIMEOUT_S) -> FreeAddressFlood:
    """``attacker`` sends ``frames`` datagrams to :func:`free_address` of its subnet; returns
    the frames the fabric's links sent meanwhile (module docstring). Needs root and the
    host's shell (``mnexec``); raises ``RuntimeError`` when the sender fails."""
    if frames <= 0:
        raise ValueError(f"frames: {frames} (must be > 0)")
    dst = free_address(fabric, attacker)
    before = _link_tx(fabric, connections)
    done = subprocess.run(["mnexec", "-a", str(shells[attacker]), sys.executable, "-c", _SEND,
                           dst, str(frames)], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"the sender on {attacker} failed: {done.stderr.strip()[-300:]}")
    seen = [before - 1]

    def still() -> bool:
        now = _link_tx(fabric, connections)
        same, seen[0] = now == seen[0], now
        return same

    settled = poll_until(still, timeout_s=settle_timeout_s, interval_s=0.3)
    return FreeAddressFlood(attacker, dst, int(done.stdout.split()[0]), seen[0] - before, settled)


__all__ = ["FREE_FRAMES", "FreeAddressFlood", "free_address", "free_address_flood"]
