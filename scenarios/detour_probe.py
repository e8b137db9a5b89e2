"""A cut cable and the leaves' detours, measured with real datagrams on a running testbed.

The cable between ``leaf`` and ``spine`` is set down in Mininet (both ends), so the spine
has no way to ``leaf`` any more (the default fabric has one link per leaf–spine pair).
:data:`PROBES` UDP datagrams, one per source port, go from a NIC on another leaf of the
same rail to a NIC on ``leaf``:

1. before GOR hears of the cut — the ones the sending leaf hashes onto the spine are lost;
2. after ``GorLoop.link_down`` — the sending leaf routes ``leaf``'s subnet to its detour
   group (:mod:`controller.gor.detour_sync`) and every datagram arrives.

GOR runs as a :class:`~controller.gor.runtime.GorRuntime` without its poller and readers
(``GorOptions(poll=False)``: the probe alone tells it of the cut). Then GOR restarts
(``GorRuntime.restart``: a new ``GorLoop`` over the same connections) and reconciles: it
must learn the cut from the ECMP groups and adopt the detours. The cable comes back up and
the restarted GOR's ``link_up`` removes the detours before :func:`probe_detour` returns. Used by ``tests/scenarios/test_detour_testbed.py`` and ``make bench`` (``gor.detour``).

    >>> with testbed_up() as tb:                                  # doctest: +SKIP
    ...     r = probe_detour(tb, "b0r0l0", "s1")
    >>> r.lost_before, r.lost_after                               # doctest: +SKIP
    (32, 0)
"""
from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from controller.gor.runtime import GorOptions, GorRuntime
from scenarios.link_failure import set_link

PROBES = 64
FIRST_SPORT = 40000
DPORT = 5001
TIMEOUT_S = 20.0

RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(1.5)
print("ready", flush=True)
got = set()
while len(got) < int(sys.argv[3]):
    try:
        data, (ip, port) = s.recvfrom(64)
    except socket.timeout:
        break
    got.add(port)
print(len(got), flush=True)
"""

SENDER = """
import socket, sys
src, dst, dport, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
for sport in range(first, first + n):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, sport))
        s.sendto(b"probe", (dst, dport))
"""


@dataclass(slots=True)
class DetourProbe:
    """What :func:`probe_detour` measured (datagrams out of :data:`PROBES`)."""

    leaf: str
    spine: str
    sender: str                  # the sending NIC's leaf
    lost_healthy: int = 0
    lost_before: int = 0         # cable cut, GOR not told yet
    lost_after: int = 0          # after GOR's link_down (detours written)
    written_s: float = 0.0       # link_down: groups at the ends + detours on every leaf
    detours: list[str] = field(default_factory=list)
    restart_down_links: list[str] = field(default_factory=list)   # learnt by a restarted GOR
    restart_adopted_detours: int = 0
    routes_after_up: int = 0     # the sender leaf's route entries once the cable is back


def _probe(fnet: Any, src: tuple[str, str], dst: tuple[str, str]) -> int:
    """Datagrams (of :data:`PROBES`) from NIC ``src`` that reach NIC ``dst`` (each
    ``(host name, ip)``); the receiver is bound before the sender starts."""
    rx = fnet.host(dst[0]).popen([sys.executable, "-c", RECEIVER, dst[1], str(DPORT),
                                  str(PROBES)], stdout=subprocess.PIPE, text=True)
    try:
        assert rx.stdout is not None
        line = rx.stdout.readline()            # the socket is bound (or the process died)
        if line.strip() != "ready":
            raise RuntimeError(f"probe receiver on {dst[0]} did not start: {line!r}")
        tx = fnet.host(src[0]).popen([sys.executable, "-c", SENDER, src[1], dst[1], str(DPORT),
                                      str(FIRST_SPORT), str(PROBES)])
        if tx.wait(TIMEOUT_S) != 0:
            raise RuntimeError(f"probe sender on {src[0]} failed")
        out, _ = rx.communicate(timeout=TIMEOUT_S)
        return int(out.strip())
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait(5)


def probe_detour(tb: Any, leaf: str, spine: str) -> DetourProbe:
    """Cut ``leaf``–``spine``, probe before and after GOR's ``link_down``, mend it (see the
    module docstring). ``tb``: a ``testbed.traffic.LiveTestbed`` (programmed fabric)."""
    fab = tb.fabric
    sw = fab.switch(leaf)
    port = next(p for p, i in sorted(sw.ports.items()) if i.peer_node == spine)
    peer_port = sw.ports[port].peer_port
    dst_host, dst_nic = next((h.name, n) for h in fab.hosts for n in h.nics if n.leaf == leaf)
    src_host, src_nic = next((h.name, n) for h in fab.hosts for n in h.nics
                             if n.rail == dst_nic.rail and n.leaf != leaf)
    src, dst = (src_host, src_nic.ip), (dst_host, dst_nic.ip)
    res = DetourProbe(leaf, spine, src_nic.leaf)
    gor = GorRuntime(fab, tb.programmer, GorOptions(poll=False))
    gor.start()                                            # nothing to adopt on a healthy fabric
    res.lost_healthy = PROBES - _probe(tb.fnet, src, dst)
    devs = [f"{leaf}-eth{port}", f"{spine}-eth{peer_port}"]
    try:
        for dev in devs:
            set_link(dev, up=False)
        res.lost_before = PROBES - _probe(tb.fnet, src, dst)
        t0 = time.monotonic()
        gor.loop.link_down(leaf, port, reason="detour probe: cable cut")
        res.written_s = round(time.monotonic() - t0, 4)
        res.detours = [f"{n}: {','.join(d.prefixes)} -> {','.join(d.group.members)}"
                       for n, ds in sorted(gor.loop.detours.items()) for d in ds.values()]
        res.lost_after = PROBES - _probe(tb.fnet, src, dst)
        report = gor.restart()                             # GOR restarts over the cut
        res.restart_down_links, res.restart_adopted_detours = report.down_links, report.adopted_detours
    finally:
        for dev in devs:
            set_link(dev, up=True)
        gor.loop.link_up(leaf, port, reason="detour probe: cable back")
        gor.stop()
    res.routes_after_up = len(tb.programmer.connections[src_nic.leaf].read_table(
        "FabricIngress.forwarding.routes"))
    return res


__all__ = ["DetourProbe", "PROBES", "probe_detour"]
