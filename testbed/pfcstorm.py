"""A PFC PAUSE storm from a compromised host on a live fabric: what it leaves in its
leaf's PFC counts (the attack row ``host-pauses-its-leaf`` of
:func:`testbed.attacks.live_fabric_attacks`).

The attacker is a testbed host. From a packet socket on its rail-0 NIC, in its
namespace, it sends 802.1Qbb PAUSE frames (every class, 65,535 quanta) every
``gap_s`` for ``storm_s``: its leaf's egress queues towards it stop (p4sim's MAC honours
PAUSE; BMv2's has no PFC and never stops). Meanwhile a host on another leaf sends
``rate_pps`` UDP datagrams in the RoCE data class (DSCP 26, priority 3) to the attacker,
over 8 source ports so the spines take both uplinks: what a job's peers keep sending a
rank. The leaf's queue towards the attacker fills; what does not fit used to be
tail-dropped by the target's queue after ``fabric.p4`` had counted it in
``FabricIngress.pfc.occupancy`` of the uplink it came from — a count never taken off.

Once the sender and the storm have ended and the leaf's counts stopped changing (bounded
polls, no fixed wait), :func:`pause_storm` reads the uplinks' occupancy and ``paused``
cells of priority 3 through the target's register runtime (p4sim's control API, BMv2's
``simple_switch_CLI``). Before the egress queue limit (``admission.p4``, sec-red-s47,
p4sim testbed, 5 s of storm at 1,000 pps): b1r0l0's uplinks were left at 735 and 1,224
packets, ``paused`` 1 on both — the leaf never paused a spine again; with it, 0 and 0.

Example (root, a testbed up)::

    >>> got = pause_storm(shells, tb.fabric, tb.state, "b1s1", "b0s1")    # doctest: +SKIP
    >>> got.leaked(), got.cells                                            # doctest: +SKIP
    (False, {3: (0, 0), 4: (0, 0)})
"""
from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from controller.fabric.qos import DSCP_TO_PRIORITY
from testbed.control import open_control
from testbed.traffic.probe import poll_until

STORM_S = 3.0
"""How long the attacker sends PAUSE frames."""
STORM_GAP_S = 0.001
"""Between two PAUSE frames (each pauses 65,535 quanta: 3.4 ms at p4sim's 10 Gb/s)."""
SENDER_PPS = 1000
"""Datagrams per second the peer sends the attacker (a queue of 64 fills in 64 ms)."""
SETTLE_TIMEOUT_S = 15.0
"""Bound on waiting for the leaf's counts to stop changing after the storm."""
OCCUPANCY = "FabricIngress.pfc.occupancy"
PAUSED = "FabricIngress.pfc.paused"
DATA_PRIORITY = DSCP_TO_PRIORITY[26]
"""The RoCE data class (DSCP 26): the lossless priority whose counts the storm leaks."""

_PAUSE = r'''
import socket, struct, sys, time
intf, mac, storm_s, gap_s = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((intf, 0))
frame = (bytes.fromhex("0180c2000001") + bytes.fromhex(mac.replace(":", ""))
         + struct.pack("!HHH", 0x8808, 0x0101, 0xFF) + struct.pack("!8H", *([0xFFFF] * 8)))
frame += bytes(60 - len(frame))
t0 = time.monotonic(); n = 0
while time.monotonic() - t0 < storm_s:
    s.send(frame); n += 1
    time.sleep(gap_s)
print(n, flush=True)
'''

_SEND = r'''
import socket, sys, time
dst, pps, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
socks = []
for _ in range(8):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 26 << 2)
    socks.append(s)
t0 = time.monotonic(); n = 0
while time.monotonic() - t0 < seconds:
    socks[n % 8].sendto(b"astral-pfc-storm" + bytes(984), (dst, 9998)); n += 1
    ahead = t0 + n / pps - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
print(n, flush=True)
'''


@dataclass(frozen=True, slots=True)
class PauseStorm:
    """One storm and the PFC cells it left on the attacker's leaf: ``cells`` is uplink port
    → (occupancy, paused) of the data priority once the counts settled.

    >>> s = PauseStorm("b1s1", "b1r0l0", 2900, 4000, {3: (0, 0), 4: (0, 0)}, True)
    >>> s.leaked()
    False
    >>> print(PauseStorm("b1s1", "b1r0l0", 2900, 4000, {3: (735, 1), 4: (0, 0)}, True))
    b1s1 sent 2900 PAUSE frames while 4000 datagrams came its way; b1r0l0's uplink PFC cells of priority 3 after it: port 3 occupancy 735 paused 1, port 4 occupancy 0 paused 0 (leaked: that uplink's PFC is stuck)
    """

    attacker: str
    leaf: str
    pause_frames: int
    datagrams: int
    cells: dict[int, tuple[int, int]]
    settled: bool

    def leaked(self) -> bool:
        """Whether a count stayed behind: an uplink cell not back at 0 packets, not paused."""
        return any(occ != 0 or paused != 0 for occ, paused in self.cells.values())

    def __str__(self) -> str:
        cells = ", ".join(f"port {p} occupancy {o} paused {z}" for p, (o, z) in sorted(self.cells.items()))
        tail = " (leaked: that uplink's PFC is stuck)" if self.leaked() else ""
        if not self.settled:
            tail += " (the counts were still changing at the bound)"
        return (f"{self.attacker} sent {self.pause_frames} PAUSE frames while {self.datagrams} "
                f"datagrams came its way; {self.leaf}'s uplink PFC cells of priority "
                f"{DATA_PRIORITY} after it: {cells}{tail}")


def _uplinks(fabric: Any, leaf: str) -> list[int]:
    names = {s.name for s in fabric.switches}
    sw = next(s for s in fabric.switches if s.name == leaf)
    return sorted(p for p, info in sw.ports.items() if info.peer_node in names)


def pause_storm(shells: Mapping[str, int], fabric: Any, state: Any, attacker: str, sender: str,
                storm_s: float = STORM_S, gap_s: float = STORM_GAP_S,
                rate_pps: int = SENDER_PPS,
                settle_timeout_s: float = SETTLE_TIMEOUT_S) -> PauseStorm:
    """``sender`` (on another leaf) sends ``attacker`` ``rate_pps`` datagrams a second for
    ``storm_s`` + 1 s while ``attacker`` sends PAUSE frames for ``storm_s``; returns the
    leaf's uplink PFC cells once they stopped changing (module docstring). Needs root and
    the hosts' shells (``mnexec``); raises ``RuntimeError`` when a host's program fails."""
    if storm_s <= 0 or rate_pps <= 0:
        raise ValueError(f"storm_s {storm_s}, rate_pps {rate_pps}: both must be > 0")
    nic, peer = fabric.host(attacker).nics[0], fabric.host(sender).nics[0]
    if nic.leaf == peer.leaf:
        raise ValueError(f"{sender} must sit on another leaf than {attacker}'s {nic.leaf} "
                         f"(its datagrams must come over the uplinks)")
    send = subprocess.Popen(["mnexec", "-a", str(shells[sender]), sys.executable, "-c", _SEND,
                             nic.ip, str(rate_pps), str(storm_s + 1.0)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        storm = subprocess.run(["mnexec", "-a", str(shells[attacker]), sys.executable, "-c",
                                _PAUSE, nic.intf, nic.mac, str(storm_s), str(gap_s)],
                               capture_output=True, text=True, timeout=storm_s + 30)
        out, err = send.communicate(timeout=storm_s + 30)
    finally:
        if send.poll() is None:
            send.kill()
            send.wait()
    if storm.returncode != 0:
        raise RuntimeError(f"the PAUSE storm from {attacker} failed: {storm.stderr.strip()[-300:]}")
    if send.returncode != 0:
        raise RuntimeError(f"the sender on {sender} failed: {err.strip()[-300:]}")
    ctl = open_control(state.target, state.switches.get(nic.leaf, {}), nic.leaf)
    try:
        ports = _uplinks(fabric, nic.leaf)

        def cells() -> dict[int, tuple[int, int]]:
            return {p: (ctl.register_read(OCCUPANCY, p * 8 + DATA_PRIORITY),
                        ctl.register_read(PAUSED, p * 8 + DATA_PRIORITY)) for p in ports}

        seen: list[Optional[dict[int, tuple[int, int]]]] = [None]

        def still() -> bool:
            now, last = cells(), seen[0]
            seen[0] = now
            return now == last                   # two reads 0.5 s apart agree

        settled = poll_until(still, timeout_s=settle_timeout_s, interval_s=0.5)
        final = seen[0] if seen[0] is not None else cells()
    finally:
        ctl.close()
    return PauseStorm(attacker, nic.leaf, int(storm.stdout.split()[0]), int(out.split()[0]),
                      final, settled)


__all__ = ["DATA_PRIORITY", "PauseStorm", "SENDER_PPS", "STORM_GAP_S", "STORM_S", "pause_storm"]
