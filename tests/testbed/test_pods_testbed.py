"""Three tiers on a live Mininet fabric (root only; skipped otherwise): the
``topo/specs/pod2-dualport.yaml`` fabric (2 pods joined by 4 cores, dual-port NICs, 16
switches) is brought up on p4sim, programmed by the controller's plan (core role and the
spines' core uplinks from ``topo.routes``), and

(a) cross-pod flows over a sample of UDP source ports each take exactly the path the hash
    model predicts (:meth:`controller.fabric.tiers.TierModel.path`: leaf uplink, spine core
    link, core downlink, spine downlink to one of the destination NIC's two leaves, that
    leaf's host port): every one of the flow's ``PACKETS`` packets is counted on the
    transmit counter of every predicted switch port, and no other switch port counts as
    many (each flow is sent alone, the counters read before and after it);
(b) every NIC answers ping from every NIC of its rail in the other pod.

Counters are the switch ports' own (``/sys/class/net/<switch>-eth<port>/statistics``,
the root namespace's end of each port); waits are bounded probes. ~40 s with bring-up.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from controller.fabric.tiers import TierModel, TierPath
from testbed.traffic import LiveTestbed, poll_until, testbed_unavailable
from topo.model import Fabric

SKIP_REASON = testbed_unavailable() or ""
pytestmark = pytest.mark.skipif(bool(SKIP_REASON), reason=SKIP_REASON or "-")
SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"
PACKETS = 40
NOISE_PKTS = PACKETS // 2     # ARP and ICMP port-unreachable replies stay far below this
SPORTS = [49152 + 997 * i for i in range(8)]     # a spread sample of the RoCE range
PAIRS = [("b0s0", 0, "p1.b0s1"), ("b0s1", 1, "p1.b0s0")]   # (source host, rail, destination host)


def _tx(fab: Fabric) -> dict[tuple[str, int], int]:
    """Transmit packets of every switch port."""
    out = {}
    for sw in fab.switches:
        for p in sw.ports:
            path = Path(f"/sys/class/net/{sw.name}-eth{p}/statistics/tx_packets")
            out[(sw.name, p)] = int(path.read_text())
    return out


def _send(tb: LiveTestbed, host: str, src: str, dst: str, sport: int) -> None:
    code = (f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.bind(('{src}', {sport})); "
            f"[s.sendto(bytes(64), ('{dst}', 4791)) for _ in range({PACKETS})]; print('sent')")
    out = tb.fnet.host(host).cmd(f"{sys.executable} -c \"{code}\"")
    assert out.strip().endswith("sent"), (host, out)


def test_cross_pod_flows_take_the_predicted_path(testbed: LiveTestbed) -> None:
    fab = testbed.fabric
    tiers = TierModel.of(fab)
    wrong: list[tuple] = []
    seen: set[tuple[tuple[str, int], ...]] = set()
    for src_host, rail, dst_host in PAIRS:
        src = fab.host(src_host).nics[rail]
        dst = fab.host(dst_host).nics[rail]
        for sport in SPORTS:
            path: TierPath = tiers.path(src, 0, dst.ip, sport)   # port 0: the host's default route
            assert len(path.hops) == 5 and fab.switch(path.switches[2]).role == "core", path
            before = _tx(fab)
            _send(testbed, src_host, src.ip, dst.ip, sport)
            last = path.hops[-1]
            assert poll_until(lambda: _tx(fab)[last] - before[last] >= PACKETS, 10.0), \
                (src.ip, dst.ip, sport, "never delivered on the predicted leaf port", path)
            after = _tx(fab)
            got = {k for k in after if after[k] - before[k] >= PACKETS}
            stray = {k: after[k] - before[k] for k in after
                     if k not in path.hops and after[k] - before[k] >= NOISE_PKTS}
            if got != set(path.hops) or stray:
                wrong.append((src.ip, dst.ip, sport, path.hops, sorted(got), stray))
            seen.add(path.hops)
    assert not wrong, wrong
    assert len(seen) > 2, seen          # the sample crosses several core paths


def test_every_nic_answers_ping_across_pods(testbed: LiveTestbed) -> None:
    fab = testbed.fabric
    failed = []
    for src in fab.hosts:
        for dst in fab.hosts:
            if src.pod == dst.pod:
                continue
            for nic, peer in zip(src.nics, dst.nics):
                out = testbed.fnet.host(src.name).cmd(f"ping -n -q -c 1 -W 2 {peer.ip}")
                if " 0% packet loss" not in out:
                    failed.append((src.name, nic.ip, peer.ip, out[-120:]))
    assert not failed, failed
