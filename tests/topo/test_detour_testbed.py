"""Detours on a live p4sim testbed (root + Mininet; skipped otherwise with the reason): the
cable b0r0l0 – s1 is cut, so s1 has no way to b0r0l0 any more. 64 UDP datagrams from a
block-1 NIC to a b0r0l0 NIC, one per source port: before GOR hears of the cut, the ones
b1r0l0 hashes onto s1 are lost; once GOR has taken the link down, b1r0l0 routes
b0r0l0's subnet to its detour group (s0 only) and every datagram arrives. The link back
up removes the detour. Brings up its own fabric (~30 s)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

PROBES = 64
FIRST_SPORT = 40000
DPORT = 5001
READY_TIMEOUT_S = 20.0

RECEIVER = """
import socket, sys, time
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


def _probe(tb: Any, src: tuple[str, str], dst: tuple[str, str]) -> int:
    """Datagrams (of :data:`PROBES`, one per source port) that reach NIC ``dst`` from NIC
    ``src`` (each ``(host name, ip)``)."""
    rx = tb.fnet.host(dst[0]).popen([sys.executable, "-c", RECEIVER, dst[1], str(DPORT),
                                     str(PROBES)], stdout=subprocess.PIPE, text=True)
    try:
        assert rx.stdout is not None
        line = rx.stdout.readline()            # blocks until the socket is bound (or exit)
        assert line.strip() == "ready", line
        tx = tb.fnet.host(src[0]).popen([sys.executable, "-c", SENDER, src[1], dst[1],
                                         str(DPORT), str(FIRST_SPORT), str(PROBES)])
        assert tx.wait(READY_TIMEOUT_S) == 0
        out, _ = rx.communicate(timeout=READY_TIMEOUT_S)
        return int(out.strip())
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait(5)


def test_traffic_to_a_leaf_its_spine_lost_takes_the_detour(tmp_path: Path) -> None:
    from controller.gor.loop import GorLoop
    from host.traffic import testbed_unavailable, testbed_up
    from topo.link_failure import set_link
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        fab = tb.fabric
        port = next(p for p, i in fab.switch("b0r0l0").ports.items() if i.peer_node == "s1")
        peer_port = fab.switch("b0r0l0").ports[port].peer_port
        dst = next((h.name, n.ip) for h in fab.hosts for n in h.nics if n.leaf == "b0r0l0")
        src = next((h.name, n.ip) for h in fab.hosts for n in h.nics if n.leaf == "b1r0l0")
        loop = GorLoop(fab, tb.programmer, None)
        assert _probe(tb, src, dst) == PROBES                    # healthy fabric: all arrive
        devs = [f"b0r0l0-eth{port}", f"s1-eth{peer_port}"]
        try:
            for dev in devs:
                set_link(dev, up=False)
            lost_before = PROBES - _probe(tb, src, dst)          # s1 drops b0r0l0's share
            t0 = time.monotonic()
            loop.link_down("b0r0l0", port, reason="test: cable cut")
            written_s = time.monotonic() - t0
            assert loop.detours["b1r0l0"][2].group.members == ("s0",), loop.detours
            lost_after = PROBES - _probe(tb, src, dst)
        finally:
            for dev in devs:
                set_link(dev, up=True)
            loop.link_up("b0r0l0", port, reason="test: cable back")
            loop.close()
        routes = tb.programmer.connections["b1r0l0"].read_table("FabricIngress.forwarding.routes")
    assert lost_before > 0, "the cut spine did not drop anything: the test proves nothing"
    assert lost_after == 0, (lost_before, lost_after)
    assert loop.detours == {} and len(routes) == 3, routes      # /32 x2 and 10.0.0.0/8 again
    print(f"detour: {lost_before}/{PROBES} lost before GOR, 0 after; written in {written_s:.3f} s")
