"""Source spoofing on a live fabric: a host sends UDP frames with another host's IPv4
source address, and a third host counts what the fabric delivered (the attack row
``host-spoofs-source-address`` of :func:`testbed.attacks.live_fabric_attacks`).

The attacker is a testbed host (its namespace and NIC; its certificate in the testbed's
PKI: what sec-audit5 called "a host holding a real testbed certificate"). From a raw IP
socket in its namespace it sends ``frames`` frames with the victim's source, then
``frames`` with its own, to the receiver. A packet socket on the receiver's NIC, opened
before the first frame is sent, counts the frames of the attack's UDP port by source. It
stops when every frame with the attacker's own source has arrived (or a bounded timeout
passes), then reads what is already queued: the receiver sits on the attacker's leaf, so
both kinds take one path and one queue, and a spoofed frame the leaf forwarded arrives
before the own frames sent after it. No fixed wait.

Before the source guard (``p4src/include/control/source_guard.p4``) the fabric delivered
every spoofed frame (sec-audit5, b1s1 → b1s0 with b0s0's source: 40 of 40 frames).

Example (root, a testbed up)::

    >>> counts = spoof_frames(shells, fabric, "b1s1", "b0s0", "b1s0")    # doctest: +SKIP
    >>> counts.spoofed_seen, counts.own_seen                                # doctest: +SKIP
    (0, 20)
"""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Mapping

SPOOF_FRAMES = 20
"""Frames sent with each source (the victim's, then the attacker's own)."""
SPOOF_UDP_PORT = 9999
"""The attack frames' UDP destination port: what the receiver counts."""
SPOOF_TIMEOUT_S = 20.0
"""How long the receiver waits for the attacker's own frames."""

_LISTEN = r'''
import json, select, socket, sys, time
intf, want_src, want, port, timeout_s = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((intf, 0))
print("ready", flush=True)
seen = {}
def take(f):
    ip = f[14:]
    if len(ip) >= 24 and ip[9] == 17 and int.from_bytes(ip[22:24], "big") == port:
        src = socket.inet_ntoa(ip[12:16])
        seen[src] = seen.get(src, 0) + 1
end = time.monotonic() + timeout_s
while seen.get(want_src, 0) < want and time.monotonic() < end:
    if select.select([s], [], [], max(0.0, end - time.monotonic()))[0]:
        take(s.recv(4096))
s.setblocking(False)
while True:
    try:
        take(s.recv(4096))
    except BlockingIOError:
        break
print(json.dumps(seen), flush=True)
'''

_SEND = r'''
import socket, struct, sys
dst, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
for src in sys.argv[4:]:
    payload = b"astral-spoof" + bytes(8)
    udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0x4000, 64, 17, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    for _ in range(n):
        r.sendto(hdr + udp, (dst, 0))
print("sent", flush=True)
'''


@dataclass(frozen=True, slots=True)
class SpoofCounts:
    """What one run sent and what the receiver saw, by source.

    >>> print(SpoofCounts("10.0.0.1", "10.1.0.2", 20, 0, 20).delivered())
    0 of 20 frames with source 10.0.0.1 delivered (20 of 20 with the sender's own 10.1.0.2)
    """

    spoofed_src: str
    own_src: str
    frames: int
    spoofed_seen: int
    own_seen: int

    def delivered(self) -> str:
        """One line: spoofed and own frames delivered."""
        return (f"{self.spoofed_seen} of {self.frames} frames with source {self.spoofed_src} "
                f"delivered ({self.own_seen} of {self.frames} with the sender's own {self.own_src})")


def host_shells(state: Any) -> dict[str, int]:
    """Host name → the PID of its Mininet shell (its namespace), from a testbed state."""
    return {r.name: r.pid for r in state.procs if r.kind == "host-shell"}


def spoof_frames(shells: Mapping[str, int], fabric: Any, attacker: str, victim: str,
                 receiver: str, frames: int = SPOOF_FRAMES,
                 timeout_s: float = SPOOF_TIMEOUT_S) -> SpoofCounts:
    """``attacker`` sends ``frames`` UDP frames with ``victim``'s address (rail 0) to
    ``receiver``'s rail-0 NIC, then ``frames`` with its own; returns what arrived (module
    docstring). Needs root and the hosts' shells (``mnexec``); raises ``RuntimeError``
    when the receiver or the sender fails."""
    nic = {h.name: h.nics[0] for h in fabric.hosts}
    if nic[attacker].leaf != nic[receiver].leaf:
        raise ValueError(f"{receiver} must sit on {attacker}'s leaf {nic[attacker].leaf} "
                         f"(one path, one queue), not on {nic[receiver].leaf}")
    own, spoofed, dst = nic[attacker].ip, nic[victim].ip, nic[receiver].ip
    listen = subprocess.Popen(
        ["mnexec", "-a", str(shells[receiver]), sys.executable, "-c", _LISTEN, nic[receiver].intf,
         own, str(frames), str(SPOOF_UDP_PORT), str(timeout_s)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = listen.stdout.readline().strip() if listen.stdout else ""
        if ready != "ready":
            raise RuntimeError(f"the receiver on {receiver} did not start: "
                               f"{(listen.stderr.read() if listen.stderr else '')[-300:]}")
        sent = subprocess.run(["mnexec", "-a", str(shells[attacker]), sys.executable, "-c", _SEND,
                               dst, str(SPOOF_UDP_PORT), str(frames), spoofed, own],
                              capture_output=True, text=True, timeout=timeout_s)
        if sent.returncode != 0:
            raise RuntimeError(f"the sender on {attacker} failed: {sent.stderr.strip()[-300:]}")
        out, err = listen.communicate(timeout=timeout_s + 10)
    finally:
        if listen.poll() is None:
            listen.kill()
            listen.wait()
    if listen.returncode != 0:
        raise RuntimeError(f"the receiver on {receiver} failed: {err.strip()[-300:]}")
    seen = json.loads(out.strip().splitlines()[-1])
    return SpoofCounts(spoofed, own, frames, int(seen.get(spoofed, 0)), int(seen.get(own, 0)))


__all__ = ["SPOOF_FRAMES", "SPOOF_TIMEOUT_S", "SPOOF_UDP_PORT", "SpoofCounts", "host_shells",
           "spoof_frames"]
